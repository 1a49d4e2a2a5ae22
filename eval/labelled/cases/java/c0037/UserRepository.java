package com.example.directory;

import java.io.IOException;
import java.io.ObjectInputFilter;
import java.io.ObjectInputStream;
import java.net.Socket;

public class UserRepository {
    private static final ObjectInputFilter FILTER =
            ObjectInputFilter.Config.createFilter("com.example.Message;java.lang.*;!*");

    public Object receive(Socket socket) throws IOException, ClassNotFoundException {
        ObjectInputStream in = new ObjectInputStream(socket.getInputStream());
        in.setObjectInputFilter(FILTER);
        return in.readObject();
    }
}
