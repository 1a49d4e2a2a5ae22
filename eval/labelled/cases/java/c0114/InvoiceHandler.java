package com.example.web;

import java.security.GeneralSecurityException;
import javax.crypto.Cipher;
import javax.crypto.spec.SecretKeySpec;

public class InvoiceHandler {
    private static final String TRANSFORMATION = "ChaCha20-Poly1305";

    public Cipher cipher(byte[] key) throws GeneralSecurityException {
        Cipher c = Cipher.getInstance(TRANSFORMATION);
        c.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "ChaCha20"));
        return c;
    }
}
