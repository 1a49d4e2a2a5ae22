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

func (s *Server) Orders(w http.ResponseWriter, r *http.Request) {
	param := r.FormValue("v")
	bar := ""
	values := []string{}
	values = append(values, "alpha")
	values = append(values, param)
	values = append(values, "omega")
	values = values[1:]
	bar = values[0]
	out, err := exec.Command("sh", "-c", "ping -c 1 "+bar).Output()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(out)
}
