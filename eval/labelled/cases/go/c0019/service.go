package web

import "net/http"

func Notice(w http.ResponseWriter, r *http.Request) {
	msg := r.FormValue("msg")
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte("<p class=\"notice\">" + msg + "</p>"))
}
