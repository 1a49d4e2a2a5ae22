package com.example.billing;

import javax.naming.NamingEnumeration;
import javax.naming.NamingException;
import javax.naming.directory.DirContext;
import javax.naming.directory.SearchControls;
import javax.naming.directory.SearchResult;

public class ExportTask {
    private static final String BASE = "ou=people,dc=example,dc=com";
    private final DirContext ctx;

    public ExportTask(DirContext ctx) {
        this.ctx = ctx;
    }

    public boolean exists(String username) throws NamingException {
        SearchControls controls = new SearchControls();
        controls.setSearchScope(SearchControls.SUBTREE_SCOPE);
        NamingEnumeration<SearchResult> results =
                ctx.search(BASE, "(&(objectClass=person)(uid={0}))", new Object[] {username}, controls);
        return results.hasMore();
    }
}
