package com.example.support;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintWriter;
import javax.servlet.http.HttpServletResponse;

public class InventoryApi {
    private final ObjectMapper mapper = new ObjectMapper();

    public void send(Object payload, HttpServletResponse response) throws IOException {
        String json = mapper.writeValueAsString(payload);
        response.setContentType("application/json");
        PrintWriter out = response.getWriter();
        out.print(json);
    }
}
