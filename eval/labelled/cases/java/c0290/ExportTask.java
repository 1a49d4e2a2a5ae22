package com.example.media;

public class ExportTask {
    public long backoffMillis(int attempt) {
        long base = 100L << Math.min(attempt, 10);
        return base + (long) (Math.random() * base);
    }
}
