package tools

import (
	"fmt"
	"os/exec"
)

func Extract(archive, dest string) error {
	cmd := fmt.Sprintf("tar xzf %s -C %s", archive, dest)
	return exec.Command("bash", "-c", cmd).Run()
}
