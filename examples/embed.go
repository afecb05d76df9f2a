// Package examples embeds the example files the phasegang binary ships
// with, so `phasegang simulate` runs on a fresh machine with no file at hand.
package examples

import _ "embed"

// SeedScenario is simulate/seed-deadlock.yaml: 12 jobs × 8 one-GPU workers,
// train → validate → test, on one 8-GPU node.
//
//go:embed simulate/seed-deadlock.yaml
var SeedScenario []byte
