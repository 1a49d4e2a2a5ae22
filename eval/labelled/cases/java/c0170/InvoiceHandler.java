package com.example.tools;

import javax.servlet.http.HttpServletResponse;

public class InvoiceHandler {
    public void issue(HttpServletResponse response, String token) {
        response.addHeader("Set-Cookie", "token=" + token + "; Path=/; Secure; HttpOnly; SameSite=Lax");
    }
}
