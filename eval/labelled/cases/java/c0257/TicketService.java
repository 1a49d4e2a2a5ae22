package com.example.portal;

import javax.xml.namespace.QName;
import javax.xml.xpath.XPath;
import javax.xml.xpath.XPathConstants;
import javax.xml.xpath.XPathExpressionException;
import javax.xml.xpath.XPathFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Node;

public class TicketService {
    private final Document users;

    public TicketService(Document users) {
        this.users = users;
    }

    public boolean exists(String user) throws XPathExpressionException {
        XPath xpath = XPathFactory.newInstance().newXPath();
        xpath.setXPathVariableResolver((QName name) -> "name".equals(name.getLocalPart()) ? user : null);
        Node node = (Node) xpath.evaluate("//user[@name=$name]", users, XPathConstants.NODE);
        return node != null;
    }
}
