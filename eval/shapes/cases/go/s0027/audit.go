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

func (s *Server) Audit(w http.ResponseWriter, r *http.Request) {
	param := r.FormValue("v")
	bar := ""
	bar = param
	rows, err := s.db.Query("SELECT * FROM users WHERE name = $1", bar)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer rows.Close()
}
