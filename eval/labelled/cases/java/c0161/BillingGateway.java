package com.example.reports;

import java.util.List;
import java.util.Map;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class BillingGateway {
    private final JdbcTemplate jdbc;

    public BillingGateway(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @GetMapping("/accounts")
    public List<Map<String, Object>> list(@RequestParam String region) {
        return jdbc.queryForList("SELECT id, name FROM accounts WHERE region = '" + region + "'");
    }
}
