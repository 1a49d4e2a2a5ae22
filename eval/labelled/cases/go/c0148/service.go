package files

import (
	"net/http"
	"path/filepath"

	"github.com/gorilla/mux"
)

const staticDir = "/srv/static"

func Static(w http.ResponseWriter, r *http.Request) {
	http.ServeFile(w, r, filepath.Join(staticDir, mux.Vars(r)["path"]))
}
