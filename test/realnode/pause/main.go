// Command pause is the real node's sandbox ("pause") image: it sleeps until
// it is signalled, as registry.k8s.io/pause does, so a pod's sandbox needs no
// download.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
