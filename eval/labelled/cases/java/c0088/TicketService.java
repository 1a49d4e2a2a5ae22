package com.example.admin;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

public class TicketService {
    private final Connection connection;

    public TicketService(Connection connection) {
        this.connection = connection;
    }

    public int countFor(long customerId) throws SQLException {
        String sql = "SELECT COUNT(*) FROM " + Tables.PAYMENTS + " WHERE customer_id = ?";
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            ps.setLong(1, customerId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        }
    }
}
