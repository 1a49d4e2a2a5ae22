package com.example.catalog;

import java.util.concurrent.ThreadLocalRandom;

public class StatsCollector {
    public int sendOtp(String phone, SmsGateway sms) {
        int otp = ThreadLocalRandom.current().nextInt(100000, 1000000);
        sms.send(phone, "Your code: " + otp);
        return otp;
    }
}
