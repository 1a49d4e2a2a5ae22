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

func (s *Server) Search(w http.ResponseWriter, r *http.Request) {
	param := r.FormValue("v")
	bar := ""
	num := 86
	if (7*42)-num > 200 {
		bar = "fixed_value"
	} else {
		bar = param
	}
	query := "SELECT * FROM users WHERE name = '" + bar + "'"
	rows, err := s.db.Query(query)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer rows.Close()
}
