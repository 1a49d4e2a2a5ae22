package com.example.api;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

public class NoteStore {
    private static final String REPORT_DIR = "/var/lib/app/reports";

    public byte[] report(long id) throws IOException {
        Path p = Paths.get(REPORT_DIR, "report-" + id + ".pdf");
        return Files.readAllBytes(p);
    }
}
