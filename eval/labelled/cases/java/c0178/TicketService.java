package com.example.catalog;

import javax.servlet.http.Cookie;
import javax.servlet.http.HttpServletResponse;

public class TicketService {
    public void startSession(HttpServletResponse response, String sessionId) {
        Cookie cookie = new Cookie("SESSION", sessionId);
        cookie.setHttpOnly(true);
        cookie.setPath("/");
        response.addCookie(cookie);
    }
}
