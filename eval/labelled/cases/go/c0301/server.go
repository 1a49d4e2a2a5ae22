package files

import (
	"net/http"
	"os"
	"path/filepath"
)

const root = "/srv/files"

func Get(w http.ResponseWriter, r *http.Request) {
	data, err := os.ReadFile(filepath.Join(root, r.URL.Query().Get("name")))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Write(data)
}
