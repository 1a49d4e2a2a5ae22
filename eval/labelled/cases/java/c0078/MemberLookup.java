package com.example.admin;

import com.thoughtworks.xstream.XStream;

public class MemberLookup {
    private final XStream xstream = new XStream();

    public Order parse(String body) {
        return (Order) xstream.fromXML(body);
    }
}
