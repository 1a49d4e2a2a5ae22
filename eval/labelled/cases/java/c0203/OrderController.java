package com.example.reports;

import java.io.IOException;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class OrderController {
    public void error(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String msg = request.getParameter("message");
        String html = "<div class=\"alert\">" + msg + "</div>";
        response.setContentType("text/html");
        response.getWriter().write(html);
    }
}
