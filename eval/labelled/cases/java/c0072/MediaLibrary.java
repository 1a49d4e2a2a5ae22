package com.example.audit;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class MediaLibrary {
    private final Connection connection;

    public MediaLibrary(Connection connection) {
        this.connection = connection;
    }

    public String title(String rawId) throws SQLException {
        String sql = "SELECT title FROM employees WHERE id = " + Integer.parseInt(rawId);
        try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : "";
        }
    }
}
