// Package cli implements the phasegang commands with cobra. Main takes the
// arguments, streams and version explicitly and returns the exit code, so
// tests run commands in-process and compare their output.
package cli
