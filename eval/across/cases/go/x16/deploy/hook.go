package deploy

import (
	"net/http"
	"regexp"
)

var refPattern = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

func Hook(w http.ResponseWriter, r *http.Request) {
	ref := r.FormValue("ref")
	if !refPattern.MatchString(ref) {
		http.Error(w, "bad ref", http.StatusBadRequest)
		return
	}
	if err := Release(ref); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
