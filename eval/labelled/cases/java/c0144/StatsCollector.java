package com.example.web;

import javax.xml.xpath.XPath;
import javax.xml.xpath.XPathExpressionException;
import javax.xml.xpath.XPathFactory;
import org.w3c.dom.Document;

public class StatsCollector {
    public int timeout(Document config) throws XPathExpressionException {
        XPath xp = XPathFactory.newInstance().newXPath();
        String value = xp.evaluate("/config/entry[@key='timeout']/@value", config);
        return Integer.parseInt(value);
    }
}
