package tools

import (
	"os/exec"
	"strings"
)

type Config struct {
	BinPath string
}

func ToolVersion(cfg Config) (string, error) {
	out, err := exec.Command(cfg.BinPath, "--version").Output()
	return strings.TrimSpace(string(out)), err
}
