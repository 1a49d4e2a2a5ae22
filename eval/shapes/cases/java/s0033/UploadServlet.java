package app.web;

import java.io.IOException;
import java.sql.*;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class UploadServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String param = request.getParameter("v");
        String bar;
        int num = 86;
        bar = (7 * 18) - num > 200 ? "fixed_value" : param;
        Process p = Runtime.getRuntime().exec("ping -c 1 " + bar);
    }
}
