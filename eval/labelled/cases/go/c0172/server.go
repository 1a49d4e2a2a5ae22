package web

import (
	"fmt"
	"net/http"
)

func Count(w http.ResponseWriter, r *http.Request, n int) {
	fmt.Fprintf(w, "<p>%d results</p>", n)
}
