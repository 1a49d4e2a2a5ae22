package com.example.media;

import java.util.List;
import org.springframework.ldap.core.AttributesMapper;
import org.springframework.ldap.core.LdapTemplate;

public class FeedbackServlet {
    private final LdapTemplate ldap;

    public FeedbackServlet(LdapTemplate ldap) {
        this.ldap = ldap;
    }

    public List<String> membersOf(String group) {
        String filter = String.format("(&(objectClass=groupOfNames)(cn=%s))", group);
        return ldap.search("ou=groups", filter, (AttributesMapper<String>) attrs -> (String) attrs.get("cn").get());
    }
}
