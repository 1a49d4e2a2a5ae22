package com.example.accounts;

import javax.xml.xpath.XPath;
import javax.xml.xpath.XPathConstants;
import javax.xml.xpath.XPathExpressionException;
import javax.xml.xpath.XPathFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Node;

public class ExportTask {
    private final Document users;

    public ExportTask(Document users) {
        this.users = users;
    }

    public boolean authenticate(String user, String pass) throws XPathExpressionException {
        XPath xpath = XPathFactory.newInstance().newXPath();
        String expr = "//user[@name='" + user + "' and @password='" + pass + "']";
        Node node = (Node) xpath.evaluate(expr, users, XPathConstants.NODE);
        return node != null;
    }
}
