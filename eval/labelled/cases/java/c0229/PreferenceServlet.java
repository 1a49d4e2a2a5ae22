package com.example.accounts;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

public class PreferenceServlet {
    private static final String REPORTS = "/var/lib/app/reports/";

    public Properties load(String fileName) throws IOException {
        Properties p = new Properties();
        try (InputStream in = new FileInputStream(REPORTS + fileName)) {
            p.load(in);
        }
        return p;
    }
}
