package com.example.admin;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;

public class AccountService {
    private final File base;

    public AccountService(File base) {
        this.base = base;
    }

    public byte[] read(String name) throws IOException {
        File target = new File(base, name);
        String root = base.getCanonicalPath() + File.separator;
        if (!target.getCanonicalPath().startsWith(root)) {
            throw new SecurityException("outside the base directory");
        }
        return Files.readAllBytes(target.toPath());
    }
}
