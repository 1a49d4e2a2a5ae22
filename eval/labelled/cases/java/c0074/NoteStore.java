package com.example.catalog;

import java.io.IOException;
import java.util.Properties;

public class NoteStore {
    private final Properties settings;

    public NoteStore(Properties settings) {
        this.settings = settings;
    }

    public Process runHook(String eventName) throws IOException {
        String commandLine = settings.getProperty("hook." + eventName) + " --event " + eventName;
        return new ProcessBuilder(commandLine.split(" ")).inheritIO().start();
    }
}
