package com.example.media;

import javax.naming.NamingException;
import javax.naming.directory.DirContext;
import javax.naming.directory.SearchControls;

public class DirectoryClient {
    private final DirContext ctx;

    public DirectoryClient(DirContext ctx) {
        this.ctx = ctx;
    }

    public boolean login(String user, String pass) throws NamingException {
        StringBuilder filter = new StringBuilder("(&(uid=");
        filter.append(user).append(")(userPassword=").append(pass).append("))");
        SearchControls sc = new SearchControls();
        return ctx.search("ou=people,dc=example,dc=com", filter.toString(), sc).hasMore();
    }
}
