package deploy

import "os/exec"

func Checkout(ref string) error {
	return exec.Command("sh", "-c", "git checkout "+ref).Run()
}
