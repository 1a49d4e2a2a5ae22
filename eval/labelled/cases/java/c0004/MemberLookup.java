package com.example.billing;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

public class MemberLookup {
    private static final Set<String> SORTABLE = Set.of("name", "created_at", "price");

    private final Connection connection;

    public MemberLookup(Connection connection) {
        this.connection = connection;
    }

    public List<String> names(String sort) throws SQLException {
        String column = SORTABLE.contains(sort) ? sort : "name";
        String sql = "SELECT id, name FROM notes ORDER BY " + column;
        List<String> out = new ArrayList<>();
        try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                out.add(rs.getString(2));
            }
        }
        return out;
    }
}
