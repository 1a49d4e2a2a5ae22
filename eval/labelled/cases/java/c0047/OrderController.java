package com.example.catalog;

import java.security.SecureRandom;

public class OrderController {
    private static final SecureRandom RNG = new SecureRandom();

    public int sendOtp(String phone, SmsGateway sms) {
        int otp = 100000 + RNG.nextInt(900000);
        sms.send(phone, "Your code: " + otp);
        return otp;
    }
}
