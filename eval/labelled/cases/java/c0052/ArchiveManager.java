package com.example.audit;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

public class ArchiveManager {
    public boolean verifySignature(byte[] payload, byte[] expected) throws NoSuchAlgorithmException {
        MessageDigest sha = MessageDigest.getInstance("SHA-1");
        return MessageDigest.isEqual(sha.digest(payload), expected);
    }
}
