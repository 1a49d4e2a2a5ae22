package tools

import "os/exec"

func RootUsage() (string, error) {
	out, err := exec.Command("sh", "-c", "df -h / | tail -1").Output()
	return string(out), err
}
