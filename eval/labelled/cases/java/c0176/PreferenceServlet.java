package com.example.inventory;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

public class PreferenceServlet {
    private final Random shuffler = new Random();

    public List<Question> quiz(List<Question> pool) {
        List<Question> copy = new ArrayList<>(pool);
        Collections.shuffle(copy, shuffler);
        return copy.subList(0, Math.min(10, copy.size()));
    }
}
