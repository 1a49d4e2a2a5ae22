package api

import (
	"database/sql"
	"net/http"
)

type Server struct {
	db *sql.DB
}

func (s *Server) email(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	var email string
	if err := s.db.QueryRow("SELECT email FROM orders WHERE id = ?", id).Scan(&email); err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Write([]byte(email))
}
