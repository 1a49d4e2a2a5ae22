package web

import (
	"fmt"
	"html"
	"net/http"
)

func Hello(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "<h1>Hello, %s</h1>", html.EscapeString(r.URL.Query().Get("name")))
}
