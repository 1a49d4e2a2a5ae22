package accounts

import (
	"encoding/json"
	"net/http"
	"strconv"
)

func Handler(svc *Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user := r.URL.Query().Get("user")
		if _, err := strconv.Atoi(user); err != nil {
			http.Error(w, "bad user", http.StatusBadRequest)
			return
		}
		out, err := svc.Statement(user)
		if err != nil {
			http.Error(w, "failed", http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(out)
	}
}
