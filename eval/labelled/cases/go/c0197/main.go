package balancer

import "math/rand"

func Pick(servers []string) string {
	return servers[rand.Intn(len(servers))]
}
