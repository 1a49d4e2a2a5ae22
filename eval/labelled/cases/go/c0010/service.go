package tools

import "os/exec"

func Clone(repoURL, dir string) error {
	return exec.Command("git", "clone", "--depth", "1", repoURL, dir).Run()
}
