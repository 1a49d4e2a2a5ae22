package web

import (
	"io"
	"net/http"
)

func Comment(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "<div>"+r.FormValue("comment")+"</div>")
}
