package com.example.admin;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class MemberLookup extends HttpServlet {
    private static final String UPLOAD_DIR = "/srv/uploads";

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        File file = new File(UPLOAD_DIR + "/" + req.getParameter("file"));
        if (!file.isFile()) {
            resp.sendError(404);
            return;
        }
        resp.setContentType("application/octet-stream");
        Files.copy(file.toPath(), resp.getOutputStream());
    }
}
