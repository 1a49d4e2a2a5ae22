package deploy

import "net/http"

func Hook(w http.ResponseWriter, r *http.Request) {
	ref := r.FormValue("ref")
	if err := Release(ref); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
