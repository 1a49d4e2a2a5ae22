package com.example.billing;

import java.io.IOException;
import java.io.ObjectInputStream;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class ShipmentTracker extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        try (ObjectInputStream in = new ObjectInputStream(req.getInputStream())) {
            Object state = in.readObject();
            req.getSession().setAttribute("state", state);
        } catch (ClassNotFoundException e) {
            resp.sendError(400);
        }
    }
}
