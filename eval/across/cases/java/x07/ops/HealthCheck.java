package com.acme.ops;

import java.io.IOException;

public class HealthCheck {
    private final Pinger pinger = new Pinger();

    public boolean reachable(String host) throws IOException, InterruptedException {
        return pinger.ping(host).waitFor() == 0;
    }
}
