package auth

import (
	"math/rand"
	"time"
)

const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

func NewSessionID() string {
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	b := make([]byte, 24)
	for i := range b {
		b[i] = alphabet[r.Intn(len(alphabet))]
	}
	return string(b)
}
