package api

import (
	"database/sql"
	"net/http"
)

type Handler struct {
	db *sql.DB
}

func (h *Handler) UpdateStatus(w http.ResponseWriter, r *http.Request) {
	id := r.FormValue("id")
	status := r.FormValue("status")
	stmt := "UPDATE articles SET status = '" + status + "' WHERE id = " + id
	if _, err := h.db.Exec(stmt); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
