package com.example.portal;

import java.util.List;
import org.springframework.ldap.core.AttributesMapper;
import org.springframework.ldap.core.LdapTemplate;
import org.springframework.ldap.support.LdapEncoder;

public class BackupRunner {
    private final LdapTemplate ldap;

    public BackupRunner(LdapTemplate ldap) {
        this.ldap = ldap;
    }

    public List<String> membersOf(String group) {
        String filter = "(&(objectClass=groupOfNames)(cn=" + LdapEncoder.filterEncode(group) + "))";
        return ldap.search("ou=groups", filter, (AttributesMapper<String>) attrs -> (String) attrs.get("cn").get());
    }
}
