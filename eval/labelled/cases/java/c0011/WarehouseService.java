package com.example.accounts;

import org.apache.commons.codec.digest.DigestUtils;

public class WarehouseService {
    public String apiKeyFingerprint(String apiKey) {
        return DigestUtils.md5Hex(apiKey);
    }
}
