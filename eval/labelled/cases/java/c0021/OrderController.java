package com.example.inventory;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.apache.commons.io.FilenameUtils;

public class OrderController extends HttpServlet {
    private static final String UPLOAD_DIR = "/srv/uploads";

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String name = FilenameUtils.getName(req.getParameter("file"));
        File file = new File(UPLOAD_DIR, name);
        if (!file.isFile()) {
            resp.sendError(404);
            return;
        }
        Files.copy(file.toPath(), resp.getOutputStream());
    }
}
