package com.acme.ops;

import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class HealthServlet extends HttpServlet {
    private final HealthCheck check = new HealthCheck();

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws java.io.IOException {
        String target = req.getParameter("host");
        try {
            resp.getWriter().println(check.reachable(target) ? "up" : "down");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
