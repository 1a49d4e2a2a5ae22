package com.example.web;

import javax.naming.NamingEnumeration;
import javax.naming.NamingException;
import javax.naming.directory.DirContext;
import javax.naming.directory.SearchControls;
import javax.naming.directory.SearchResult;

public class CustomerPortal {
    private static final String BASE = "ou=people,dc=example,dc=com";
    private final DirContext ctx;

    public CustomerPortal(DirContext ctx) {
        this.ctx = ctx;
    }

    public boolean exists(String username) throws NamingException {
        SearchControls controls = new SearchControls();
        controls.setSearchScope(SearchControls.SUBTREE_SCOPE);
        String filter = "(&(objectClass=person)(uid=" + username + "))";
        NamingEnumeration<SearchResult> results = ctx.search(BASE, filter, controls);
        return results.hasMore();
    }
}
