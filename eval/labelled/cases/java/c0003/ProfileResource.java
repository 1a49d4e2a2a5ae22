package com.example.support;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.servlet.http.HttpServletRequest;

public class ProfileResource {
    private final Connection connection;

    public ProfileResource(Connection connection) {
        this.connection = connection;
    }

    public List<String> find(HttpServletRequest request) throws SQLException {
        String value = request.getParameter("owner");
        String sql = "SELECT id, owner FROM articles WHERE owner = ?";
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = connection.prepareStatement(sql)) {
            ps.setString(1, value);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(2));
                }
            }
        }
        return out;
    }
}
