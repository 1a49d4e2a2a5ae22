package web

import (
	"net/http"
	"time"
)

func Remember(w http.ResponseWriter, token string) {
	http.SetCookie(w, &http.Cookie{
		Name:     "remember",
		Value:    token,
		Path:     "/",
		Expires:  time.Now().Add(30 * 24 * time.Hour),
		HttpOnly: true,
		Secure:   true,
		SameSite: http.SameSiteLaxMode,
	})
}
