package web

import "net/http"

func SetSession(w http.ResponseWriter, sid string) {
	http.SetCookie(w, &http.Cookie{Name: "session", Value: sid, Path: "/", Secure: true, HttpOnly: true})
}
