package com.example.admin;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

public class SupportDesk {
    private final Connection connection;

    public SupportDesk(Connection connection) {
        this.connection = connection;
    }

    public List<Long> search(String category, String sort) throws SQLException {
        StringBuilder sql = new StringBuilder("SELECT id FROM comments WHERE archived = 0");
        if (category != null && !category.isEmpty()) {
            sql.append(" AND category = '").append(category).append("'");
        }
        if (sort != null) {
            sql.append(" ORDER BY ").append(sort);
        }
        List<Long> ids = new ArrayList<>();
        try (Statement st = connection.createStatement();
             ResultSet rs = st.executeQuery(sql.toString())) {
            while (rs.next()) {
                ids.add(rs.getLong(1));
            }
        }
        return ids;
    }
}
