// Package examples embeds the example files the phasegang binary ships
// with, so `phasegang simulate` runs on a fresh machine with no file at hand.
package examples

import _ "embed"

// SeedScenario is simulate/seed-deadlock.yaml: 12 train (8 one-GPU
// workers, elastic from 4) → validate (2) → test (1) pipelines on 2 nodes ×
// 8 GPUs, 9 arriving one every 15 minutes and 3 at once at 1h10m.
//
//go:embed simulate/seed-deadlock.yaml
var SeedScenario []byte
