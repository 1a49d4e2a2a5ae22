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

func (s *Server) Ledger(w http.ResponseWriter, r *http.Request) {
	param := r.FormValue("v")
	bar := ""
	values := map[string]string{}
	values["keyA-1"] = "a_Value"
	values["keyB-2"] = param
	values["keyC"] = "another_Value"
	bar = values["keyB-2"]
	query := "SELECT * FROM users WHERE name = '" + bar + "'"
	rows, err := s.db.Query(query)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer rows.Close()
}
