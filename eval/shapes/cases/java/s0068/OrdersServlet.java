package app.web;

import java.io.IOException;
import java.sql.*;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class OrdersServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String param = request.getParameter("v");
        String bar;
        java.util.List<String> values = new java.util.ArrayList<String>();
        values.add("alpha");
        values.add(param);
        values.add("omega");
        values.remove(0);
        bar = values.get(0);
        Process p = Runtime.getRuntime().exec("ping -c 1 " + bar);
    }
}
