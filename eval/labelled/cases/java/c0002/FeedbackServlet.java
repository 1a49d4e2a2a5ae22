package com.example.audit;

import java.io.File;
import java.io.IOException;

public class FeedbackServlet {
    private final File workDir;

    public FeedbackServlet(File workDir) {
        this.workDir = workDir;
    }

    public int pack(String archive, String dir) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder("sh", "-c", "tar czf " + archive + " " + dir);
        pb.directory(workDir);
        pb.inheritIO();
        return pb.start().waitFor();
    }
}
