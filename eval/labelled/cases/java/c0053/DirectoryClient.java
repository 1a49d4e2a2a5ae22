package com.example.reports;

import java.io.File;
import java.io.IOException;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.multipart.MultipartFile;

@RestController
public class DirectoryClient {
    private final File uploadDir = new File("/srv/uploads");

    @PostMapping("/upload")
    public String upload(@RequestParam("file") MultipartFile file) throws IOException {
        file.transferTo(new File(uploadDir, file.getOriginalFilename()));
        return "stored";
    }
}
