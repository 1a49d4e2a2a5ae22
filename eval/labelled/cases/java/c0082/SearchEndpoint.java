package com.example.inventory;

import static org.springframework.ldap.query.LdapQueryBuilder.query;

import java.util.List;
import org.springframework.ldap.core.AttributesMapper;
import org.springframework.ldap.core.LdapTemplate;

public class SearchEndpoint {
    private final LdapTemplate ldap;

    public SearchEndpoint(LdapTemplate ldap) {
        this.ldap = ldap;
    }

    public List<String> byUid(String uid) {
        return ldap.search(
                query().base("ou=people").where("objectClass").is("person").and("uid").is(uid),
                (AttributesMapper<String>) attrs -> (String) attrs.get("cn").get());
    }
}
