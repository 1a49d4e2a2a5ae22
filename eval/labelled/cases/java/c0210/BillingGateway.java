package com.example.accounts;

import javax.naming.NamingEnumeration;
import javax.naming.NamingException;
import javax.naming.directory.DirContext;
import javax.naming.directory.SearchControls;
import javax.naming.directory.SearchResult;
import javax.servlet.http.HttpServletRequest;

public class BillingGateway {
    private final DirContext ctx;

    public BillingGateway(DirContext ctx) {
        this.ctx = ctx;
    }

    public NamingEnumeration<SearchResult> byMail(HttpServletRequest request) throws NamingException {
        SearchControls sc = new SearchControls();
        sc.setSearchScope(SearchControls.SUBTREE_SCOPE);
        return ctx.search("dc=example,dc=com", "(mail=" + request.getParameter("mail") + ")", sc);
    }
}
