package files

import (
	"io"
	"os"
)

func Open(name string, w io.Writer) error {
	f, err := os.Open("/var/data/" + name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
