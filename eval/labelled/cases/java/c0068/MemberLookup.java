package com.example.catalog;

import javax.servlet.http.HttpServletRequest;
import javax.xml.xpath.XPath;
import javax.xml.xpath.XPathExpressionException;
import javax.xml.xpath.XPathFactory;
import org.w3c.dom.Document;

public class MemberLookup {
    private final Document catalog;

    public MemberLookup(Document catalog) {
        this.catalog = catalog;
    }

    public String price(HttpServletRequest request) throws XPathExpressionException {
        XPath xp = XPathFactory.newInstance().newXPath();
        return xp.evaluate("/catalog/book[isbn='" + request.getParameter("isbn") + "']/price", catalog);
    }
}
