package accounts

import (
	"encoding/json"
	"net/http"
)

func Handler(svc *Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user := r.URL.Query().Get("user")
		out, err := svc.Statement(user)
		if err != nil {
			http.Error(w, "failed", http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(out)
	}
}
