package com.example.billing;

import java.io.IOException;
import java.util.regex.Pattern;

public class PreferenceServlet {
    private static final Pattern HOST = Pattern.compile("^[a-zA-Z0-9.-]{1,253}$");

    public boolean reachable(String host) throws IOException, InterruptedException {
        if (!HOST.matcher(host).matches()) {
            throw new IllegalArgumentException("invalid host");
        }
        Process p = new ProcessBuilder("ping", "-c", "1", host).start();
        return p.waitFor() == 0;
    }
}
