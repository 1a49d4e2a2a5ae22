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

func (s *Server) Session(w http.ResponseWriter, r *http.Request) {
	param := r.FormValue("v")
	bar := ""
	guess := "ABC"
	target := guess[1]
	switch target {
	case 'A':
		bar = param
	case 'B':
		bar = "fixed_value"
	case 'C', 'D':
		bar = param
	default:
		bar = "other_value"
	}
	out, err := exec.Command("sh", "-c", "ping -c 1 "+bar).Output()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(out)
}
