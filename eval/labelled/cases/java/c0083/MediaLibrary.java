package com.example.admin;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.net.ServerSocket;
import java.net.Socket;

public class MediaLibrary implements Runnable {
    private final ServerSocket server;

    public MediaLibrary(ServerSocket server) {
        this.server = server;
    }

    @Override
    public void run() {
        while (!server.isClosed()) {
            try (Socket s = server.accept();
                 ObjectInputStream in = new ObjectInputStream(s.getInputStream())) {
                Message m = (Message) in.readObject();
                handle(m);
            } catch (IOException | ClassNotFoundException e) {
                return;
            }
        }
    }

    private void handle(Message m) {
        System.out.println(m);
    }
}
