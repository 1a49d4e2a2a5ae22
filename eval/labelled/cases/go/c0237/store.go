package client

import (
	"math/rand"
	"time"
)

func Backoff(attempt int) time.Duration {
	base := time.Duration(100<<attempt) * time.Millisecond
	return base + time.Duration(rand.Int63n(int64(base)))
}
