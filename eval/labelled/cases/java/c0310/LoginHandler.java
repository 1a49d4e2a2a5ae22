package com.example.inventory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

public class LoginHandler {
    public String resolve(String domain) throws IOException, InterruptedException {
        String cmd = "nslookup " + domain;
        Process p = Runtime.getRuntime().exec(cmd);
        p.waitFor();
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
}
