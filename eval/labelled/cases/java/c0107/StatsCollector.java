package com.example.api;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class StatsCollector {
    private final Connection connection;

    public StatsCollector(Connection connection) {
        this.connection = connection;
    }

    private static String clause(String field, String value) {
        return field + " = '" + value + "'";
    }

    public String lookup(String name) throws SQLException {
        try (Statement st = connection.createStatement();
             ResultSet rs = st.executeQuery("SELECT email FROM notes WHERE " + clause("name", name))) {
            return rs.next() ? rs.getString(1) : null;
        }
    }
}
