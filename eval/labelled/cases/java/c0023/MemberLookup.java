package com.example.catalog;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

public class MemberLookup {
    private final Connection connection;

    public MemberLookup(Connection connection) {
        this.connection = connection;
    }

    /** Removes every row the given owner created. */
    public int purgeOwner(String owner) throws SQLException {
        String sql = "DELETE FROM comments WHERE owner = '" + owner + "'";
        try (Statement st = connection.createStatement()) {
            return st.executeUpdate(sql);
        }
    }
}
