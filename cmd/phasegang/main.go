package main

import (
	"os"

	"github.com/phasegang/phasegang/cmd/phasegang/internal/cli"
)

// version is stamped at build time: go build -ldflags '-X main.version=v0.1.0'.
var version = "dev"

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, version))
}
