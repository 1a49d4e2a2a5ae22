package com.example.portal;

import javax.servlet.http.HttpServletResponse;

public class AccountService {
    public void issue(HttpServletResponse response, String token) {
        response.addHeader("Set-Cookie", "token=" + token + "; Path=/; HttpOnly; SameSite=Lax");
    }
}
