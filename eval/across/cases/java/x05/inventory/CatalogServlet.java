package com.acme.inventory;

import java.io.IOException;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class CatalogServlet extends HttpServlet {
    private CatalogService service;

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String category = req.getParameter("category");
        try {
            resp.getWriter().println(service.countIn(category));
        } catch (java.sql.SQLException e) {
            resp.sendError(500);
        }
    }
}
