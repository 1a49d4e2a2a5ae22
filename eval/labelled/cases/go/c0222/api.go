package web

import (
	"html/template"
	"net/http"
)

var hello = template.Must(template.New("h").Parse(`<h1>Hello, {{.}}</h1>`))

func Hello(w http.ResponseWriter, r *http.Request) {
	hello.Execute(w, r.URL.Query().Get("name"))
}
