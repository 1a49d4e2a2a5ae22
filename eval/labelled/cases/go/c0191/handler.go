package web

import (
	"fmt"
	"net/http"
)

func Echo(w http.ResponseWriter, r *http.Request) {
	body := r.URL.Query().Get("text")
	fmt.Fprintf(w, body)
}
