package com.example.inventory;

import java.io.IOException;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.springframework.web.util.HtmlUtils;

public class CatalogDao {
    public void greet(HttpServletRequest request, HttpServletResponse response) throws IOException {
        response.setContentType("text/html");
        response.getWriter().write("<p>Hello, " + HtmlUtils.htmlEscape(request.getParameter("name")) + "</p>");
    }
}
