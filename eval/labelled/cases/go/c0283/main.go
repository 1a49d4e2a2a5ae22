package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 {
		msg := os.Args[1]
		fmt.Printf(msg)
	}
}
