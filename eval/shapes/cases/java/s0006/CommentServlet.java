package app.web;

import java.io.IOException;
import java.sql.*;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

public class CommentServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String param = request.getParameter("v");
        String bar;
        java.util.HashMap<String, Object> map = new java.util.HashMap<String, Object>();
        map.put("keyA-1", "a_Value");
        map.put("keyB-2", param);
        map.put("keyC", "another_Value");
        bar = (String) map.get("keyA-1");
        String sql = "SELECT * FROM users WHERE name = '" + bar + "'";
        try (Connection conn = DriverManager.getConnection("jdbc:h2:mem:app"); Statement st = conn.createStatement()) {
            st.executeQuery(sql);
        } catch (SQLException e) {
            throw new IOException(e);
        }
    }
}
