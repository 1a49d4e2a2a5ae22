package com.example.catalog;

import java.util.List;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class AccountService {
    private final JdbcTemplate jdbc;

    public AccountService(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @GetMapping("/invoices/names")
    public List<String> names(@RequestParam String region) {
        return jdbc.queryForList("SELECT name FROM invoices WHERE region = ?", String.class, region);
    }
}
