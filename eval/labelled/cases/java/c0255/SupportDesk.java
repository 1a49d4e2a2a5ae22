package com.example.inventory;

import javax.xml.xpath.XPath;
import javax.xml.xpath.XPathExpressionException;
import javax.xml.xpath.XPathFactory;
import org.w3c.dom.Document;

public class SupportDesk {
    public String status(Document orders, long orderId) throws XPathExpressionException {
        XPath xp = XPathFactory.newInstance().newXPath();
        return xp.evaluate("//order[@id=" + orderId + "]/status", orders);
    }
}
