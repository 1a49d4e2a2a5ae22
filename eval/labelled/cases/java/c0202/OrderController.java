package com.example.admin;

import java.io.IOException;

public class OrderController {
    private static final String REFRESH = "/usr/local/bin/refresh-cache";

    public void refresh() throws IOException, InterruptedException {
        String cmd = REFRESH;
        Process p = Runtime.getRuntime().exec(cmd);
        p.waitFor();
    }
}
