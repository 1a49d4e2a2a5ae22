package com.example.admin;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

public class UserRepository {
    public String diskUsage() throws IOException, InterruptedException {
        Process p = Runtime.getRuntime().exec("df -h");
        p.waitFor();
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
}
