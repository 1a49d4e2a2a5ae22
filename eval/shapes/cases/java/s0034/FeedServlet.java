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
        String guess = "ABC";
        char target = guess.charAt(1);
        switch (target) {
            case 'A':
                bar = param;
                break;
            case 'B':
                bar = "fixed_value";
                break;
            case 'C':
            case 'D':
                bar = param;
                break;
            default:
                bar = "other_value";
                break;
        }
        Process p = Runtime.getRuntime().exec("ping -c 1 " + bar);
    }
}
