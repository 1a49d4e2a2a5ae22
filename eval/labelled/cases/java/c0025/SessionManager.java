package com.example.support;

import java.util.Random;

public class SessionManager {
    public String passwordResetToken() {
        String resetToken = Integer.toHexString(new Random().nextInt());
        return resetToken;
    }
}
