package com.example.catalog;

import java.io.IOException;
import java.io.InputStream;

public class OrderController {
    public InputStream grep(String pattern) throws IOException {
        String[] cmd = {"/bin/bash", "-c", "grep -i " + pattern + " /var/log/app/app.log"};
        return Runtime.getRuntime().exec(cmd).getInputStream();
    }
}
