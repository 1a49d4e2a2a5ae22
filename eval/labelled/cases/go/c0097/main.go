package tools

import "os/exec"

func Resize(src, dst string) error {
	return exec.Command("convert", src, "-resize", "200x200", dst).Run()
}
