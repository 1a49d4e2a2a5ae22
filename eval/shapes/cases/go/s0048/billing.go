package handlers

import (
	"database/sql"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"os/exec"
	"strings"
)

type Server struct {
	db *sql.DB
}

func (s *Server) Billing(w http.ResponseWriter, r *http.Request) {
	param := r.FormValue("v")
	bar := ""
	if len(param) > 3 {
		bar = html.EscapeString(param)
	} else {
		bar = template.HTMLEscapeString(param)
	}
	fmt.Fprintf(w, "<p>%s</p>", bar)
}
