package com.acme.ops;

import java.io.IOException;

public class Pinger {
    public Process ping(String host) throws IOException {
        return Runtime.getRuntime().exec(new String[] {"sh", "-c", "ping -c 1 " + host});
    }
}
