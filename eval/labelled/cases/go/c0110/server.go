package web

import (
	"html/template"
	"net/http"
)

var page = template.Must(template.New("p").Parse(`<div class="bio">{{.Bio}}</div>`))

func Bio(w http.ResponseWriter, r *http.Request) {
	data := struct{ Bio template.HTML }{Bio: template.HTML(r.FormValue("bio"))}
	page.Execute(w, data)
}
