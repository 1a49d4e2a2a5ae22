package com.example.audit;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class CatalogDao {
    private final Connection connection;

    public CatalogDao(Connection connection) {
        this.connection = connection;
    }

    public boolean exists(String email) throws SQLException {
        String q = String.format("SELECT COUNT(*) FROM invoices WHERE email = '%s'", email);
        try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery(q)) {
            return rs.next() && rs.getInt(1) > 0;
        }
    }
}
