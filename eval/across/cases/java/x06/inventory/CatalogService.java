package com.acme.inventory;

import java.sql.ResultSet;
import java.sql.SQLException;

public class CatalogService {
    private final ItemDao dao;

    public CatalogService(ItemDao dao) {
        this.dao = dao;
    }

    public int countIn(String category) throws SQLException {
        ResultSet rs = dao.findByCategory(category);
        int n = 0;
        while (rs.next()) {
            n++;
        }
        return n;
    }
}
