package com.example.reports;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

public class AuditJob {
    private final Connection connection;

    public AuditJob(Connection connection) {
        this.connection = connection;
    }

    public List<Long> activeIds() throws SQLException {
        String status = "active";
        String sql = "SELECT id FROM customers WHERE status = '" + status + "'";
        List<Long> ids = new ArrayList<>();
        try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                ids.add(rs.getLong(1));
            }
        }
        return ids;
    }
}
