package com.example.tools;

import javax.servlet.http.Cookie;
import javax.servlet.http.HttpServletResponse;

public class SessionManager {
    public void remember(HttpServletResponse response, String token) {
        Cookie cookie = new Cookie("remember_me", token);
        cookie.setHttpOnly(true);
        cookie.setSecure(false);
        cookie.setMaxAge(30 * 24 * 3600);
        response.addCookie(cookie);
    }
}
