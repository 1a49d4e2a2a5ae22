package com.example.support;

import java.security.GeneralSecurityException;
import java.security.spec.KeySpec;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;

public class InvoiceHandler {
    public byte[] hashPassword(char[] password, byte[] salt) throws GeneralSecurityException {
        KeySpec spec = new PBEKeySpec(password, salt, 310000, 256);
        return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256").generateSecret(spec).getEncoded();
    }
}
