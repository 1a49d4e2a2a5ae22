package com.acme.inventory;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class ItemDao {
    private final Connection connection;

    public ItemDao(Connection connection) {
        this.connection = connection;
    }

    public ResultSet findByCategory(String category) throws SQLException {
        Statement st = connection.createStatement();
        return st.executeQuery("SELECT * FROM items WHERE category = '" + category + "'");
    }
}
