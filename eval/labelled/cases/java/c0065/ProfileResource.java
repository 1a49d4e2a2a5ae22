package com.example.directory;

import java.io.IOException;
import java.io.PrintWriter;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.apache.commons.text.StringEscapeUtils;

public class ProfileResource {
    public void show(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String name = StringEscapeUtils.escapeHtml4(request.getParameter("name"));
        response.setContentType("text/html");
        PrintWriter out = response.getWriter();
        out.println("<p>" + name + "</p>");
    }
}
