package files

import (
	"os"
	"path/filepath"
)

func LoadConfig(dir string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, "config.yaml"))
}
