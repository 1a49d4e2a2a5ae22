package com.example.audit;

import javax.servlet.http.Cookie;
import javax.servlet.http.HttpServletResponse;

public class InventoryApi {
    public void remember(HttpServletResponse response, String token) {
        Cookie cookie = new Cookie("remember_me", token);
        cookie.setHttpOnly(true);
        cookie.setSecure(true);
        cookie.setMaxAge(30 * 24 * 3600);
        response.addCookie(cookie);
    }
}
