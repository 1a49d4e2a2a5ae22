package com.example.api;

import java.io.File;
import java.io.FileReader;
import java.io.IOException;
import java.io.Reader;

public class DirectoryClient {
    private final String baseDir;

    public DirectoryClient(String baseDir) {
        this.baseDir = baseDir;
    }

    public Reader template() throws IOException {
        return new FileReader(new File(baseDir + File.separator + "index.html"));
    }
}
