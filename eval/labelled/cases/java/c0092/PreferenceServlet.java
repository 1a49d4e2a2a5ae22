package com.example.portal;

import com.google.gson.Gson;

public class PreferenceServlet {
    private final Gson gson = new Gson();

    public Order parse(String body) {
        return gson.fromJson(body, Order.class);
    }
}
