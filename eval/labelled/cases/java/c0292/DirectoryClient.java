package com.example.inventory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

public class DirectoryClient {
    public String uptime() throws IOException {
        Process p = Runtime.getRuntime().exec(new String[] {"uptime"});
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    }
}
