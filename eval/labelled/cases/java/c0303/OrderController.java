package com.example.media;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

public class OrderController {
    private final Connection connection;

    public OrderController(Connection connection) {
        this.connection = connection;
    }

    public void record(String user, String action) throws SQLException {
        String sql = "INSERT INTO audit_log (username, action) VALUES (?, ?)";
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            ps.setString(1, user);
            ps.setString(2, action);
            ps.executeUpdate();
        }
    }
}
