package com.example.catalog;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;
import javax.servlet.http.HttpServletResponse;

public class PreferenceServlet {
    public void render(List<Comment> comments, HttpServletResponse response) throws IOException {
        response.setContentType("text/html");
        PrintWriter out = response.getWriter();
        for (Comment comment : comments) {
            out.write("<div class=\"comment\">" + comment.getBody() + "</div>");
        }
    }
}
