package app.web;

import java.io.IOException;
import java.sql.*;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class FeedServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String param = request.getParameter("v");
        String bar;
        if (param.length() > 3) {
            bar = org.owasp.esapi.ESAPI.encoder().encodeForHTML(param);
        } else {
            bar = param;
        }
        response.getWriter().println("<p>" + bar + "</p>");
    }
}
