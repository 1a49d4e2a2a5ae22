package auth

import (
	"crypto/sha1"
	"encoding/hex"
)

func TokenDigest(token string) string {
	h := sha1.New()
	h.Write([]byte(token))
	return hex.EncodeToString(h.Sum(nil))
}
