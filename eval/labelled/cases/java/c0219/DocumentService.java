package com.example.api;

import java.security.GeneralSecurityException;
import javax.crypto.Cipher;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public class DocumentService {
    private final byte[] key;

    public DocumentService(byte[] key) {
        this.key = key;
    }

    public byte[] encrypt(byte[] plain, byte[] iv) throws GeneralSecurityException {
        Cipher c = Cipher.getInstance("DES/CBC/PKCS5Padding");
        c.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "DES"), new IvParameterSpec(iv));
        return c.doFinal(plain);
    }
}
