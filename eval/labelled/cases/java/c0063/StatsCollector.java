package com.example.orders;

import javax.xml.xpath.XPath;
import javax.xml.xpath.XPathConstants;
import javax.xml.xpath.XPathExpressionException;
import javax.xml.xpath.XPathFactory;
import org.w3c.dom.Document;
import org.w3c.dom.NodeList;

public class StatsCollector {
    public NodeList ordersOf(Document doc, String customer) throws XPathExpressionException {
        XPath xp = XPathFactory.newInstance().newXPath();
        String query = String.format("//order[customer/text()='%s']", customer);
        return (NodeList) xp.compile(query).evaluate(doc, XPathConstants.NODESET);
    }
}
