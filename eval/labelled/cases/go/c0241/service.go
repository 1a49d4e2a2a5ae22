package auth

import (
	"fmt"
	"math/rand"
)

func VerificationCode() string {
	verifyCode := fmt.Sprintf("%06d", rand.Intn(1000000))
	return verifyCode
}
