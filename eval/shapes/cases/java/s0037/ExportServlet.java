package app.web;

import java.io.IOException;
import java.sql.*;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class ExportServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String param = request.getParameter("v");
        String bar;
        bar = param;
        String sql = "SELECT * FROM users WHERE name = ?";
        try (Connection conn = DriverManager.getConnection("jdbc:h2:mem:app"); PreparedStatement ps = conn.prepareStatement(sql)) {
            ps.setString(1, bar);
            ps.executeQuery();
        } catch (SQLException e) {
            throw new IOException(e);
        }
    }
}
