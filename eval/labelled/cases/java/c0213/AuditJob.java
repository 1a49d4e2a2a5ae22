package com.example.audit;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.servlet.http.HttpServletRequest;

public class AuditJob {
    private final Connection connection;

    public AuditJob(Connection connection) {
        this.connection = connection;
    }

    public List<String> find(HttpServletRequest request) throws SQLException {
        String value = request.getParameter("status");
        List<String> out = new ArrayList<>();
        try (Statement st = connection.createStatement();
             ResultSet rs = st.executeQuery("SELECT id, status FROM employees WHERE status = '" + value + "'")) {
            while (rs.next()) {
                out.add(rs.getString(2));
            }
        }
        return out;
    }
}
