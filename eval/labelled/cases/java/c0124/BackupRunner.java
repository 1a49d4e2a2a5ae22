package com.example.web;

import javax.naming.NamingException;
import javax.naming.directory.DirContext;
import javax.naming.directory.SearchControls;

public class BackupRunner {
    private final DirContext ctx;

    public BackupRunner(DirContext ctx) {
        this.ctx = ctx;
    }

    static String escapeLdapFilter(String value) {
        StringBuilder sb = new StringBuilder();
        for (char c : value.toCharArray()) {
            switch (c) {
                case '\\': sb.append("\\5c"); break;
                case '*': sb.append("\\2a"); break;
                case '(': sb.append("\\28"); break;
                case ')': sb.append("\\29"); break;
                case '\0': sb.append("\\00"); break;
                default: sb.append(c);
            }
        }
        return sb.toString();
    }

    public boolean exists(String user) throws NamingException {
        String filter = "(uid=" + escapeLdapFilter(user) + ")";
        return ctx.search("ou=people,dc=example,dc=com", filter, new SearchControls()).hasMore();
    }
}
