package com.example.reports;

import java.io.IOException;
import java.io.InputStream;
import java.io.InvalidClassException;
import java.io.ObjectInputStream;
import java.io.ObjectStreamClass;
import java.util.Set;

public class InventoryApi {
    private static final Set<String> ALLOWED = Set.of("com.example.Message", "java.lang.String");

    public Object read(InputStream raw) throws IOException, ClassNotFoundException {
        try (ObjectInputStream in = new ObjectInputStream(raw) {
            @Override
            protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
                if (!ALLOWED.contains(desc.getName())) {
                    throw new InvalidClassException(desc.getName(), "not allowed");
                }
                return super.resolveClass(desc);
            }
        }) {
            return in.readObject();
        }
    }
}
