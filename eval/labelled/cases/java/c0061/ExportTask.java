package com.example.billing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

public class ExportTask {
    public String recentCommits(int limit) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("git", "log", "--oneline", "-n", String.valueOf(limit))
                .redirectErrorStream(true)
                .start();
        p.waitFor();
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
}
