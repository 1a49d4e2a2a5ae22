package tools

import (
	"net/http"
	"os/exec"
)

func Version(w http.ResponseWriter, r *http.Request) {
	out, err := exec.Command(r.URL.Query().Get("tool"), "--version").Output()
	if err != nil {
		http.Error(w, "failed", http.StatusInternalServerError)
		return
	}
	w.Write(out)
}
