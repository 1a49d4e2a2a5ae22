package com.example.admin;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

public class UserRepository {
    private static final String TABLE = "invoices";
    private static final String COLUMNS = "id, name, created_at";

    private final Connection connection;

    public UserRepository(Connection connection) {
        this.connection = connection;
    }

    public String nameOf(long id) throws SQLException {
        String sql = "SELECT " + COLUMNS + " FROM " + TABLE + " WHERE id = ?";
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString("name") : null;
            }
        }
    }
}
