// Command phasegang is the phasegang command-line tool.
//
//	phasegang validate FILE...   check PhasedTraining YAML files as the API
//	                             server and the controller would
//	phasegang version            print the version and the Go version
//
// The commands live in internal/cli so they can be tested without a process;
// this package only wires them to the process's arguments, streams and exit
// code.
package main
