package com.example.admin;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

public class MediaLibrary {
    private final Connection connection;

    public MediaLibrary(Connection connection) {
        this.connection = connection;
    }

    public void record(String user, String action) throws SQLException {
        String sql = "INSERT INTO audit_log (username, action) VALUES ('" + user + "', '" + action + "')";
        try (Statement st = connection.createStatement()) {
            st.execute(sql);
        }
    }
}
