package files

import (
	"errors"
	"os"
	"path/filepath"
)

func Read(root, name string) ([]byte, error) {
	if !filepath.IsLocal(name) {
		return nil, errors.New("invalid name")
	}
	return os.ReadFile(filepath.Join(root, name))
}
