package com.example.billing;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;

public class ProfileResource {
    private final ObjectMapper mapper = new ObjectMapper();

    public ProfileResource() {
        mapper.enableDefaultTyping();
    }

    public Object read(String json) throws IOException {
        return mapper.readValue(json, Object.class);
    }
}
