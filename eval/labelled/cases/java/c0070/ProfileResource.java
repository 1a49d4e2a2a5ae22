package com.example.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import javax.servlet.http.HttpServletRequest;

public class ProfileResource {
    private final String baseDir;

    public ProfileResource(String baseDir) {
        this.baseDir = baseDir;
    }

    public byte[] read(HttpServletRequest request) throws IOException {
        String name = request.getParameter("name");
        Path path = Paths.get(baseDir, name);
        return Files.readAllBytes(path);
    }
}
