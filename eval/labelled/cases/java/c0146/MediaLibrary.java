package com.example.directory;

import java.security.SecureRandom;
import java.util.Base64;

public class MediaLibrary {
    private final SecureRandom random = new SecureRandom();

    public String newSessionToken() {
        byte[] bytes = new byte[32];
        random.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }
}
