package com.example.tools;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.servlet.http.HttpServletRequest;

public class ProfileResource {
    private final Connection connection;

    public ProfileResource(Connection connection) {
        this.connection = connection;
    }

    public void setStatus(HttpServletRequest request) throws SQLException {
        String id = request.getParameter("id");
        String status = request.getParameter("status");
        try (PreparedStatement ps = connection.prepareStatement(
                "UPDATE notes SET status = ? WHERE id = " + id)) {
            ps.setString(1, status);
            ps.executeUpdate();
        }
    }
}
