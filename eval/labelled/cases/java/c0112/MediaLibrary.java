package com.example.admin;

import java.util.Random;

public class MediaLibrary {
    private final Random random = new Random();

    public String newSessionToken() {
        return Long.toString(random.nextLong() & Long.MAX_VALUE, 36);
    }
}
