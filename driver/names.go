package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/engine"
)

// Labels and annotations phasegang puts on what it creates.
const (
	LabelManaged   = "phasegang.dev/managed"
	LabelPipeline  = "phasegang.dev/pipeline"
	LabelPhase     = "phasegang.dev/phase"
	LabelIteration = "phasegang.dev/iteration"
	LabelAttempt   = "phasegang.dev/attempt"
	LabelWorker    = "phasegang.dev/worker-index"
	// LabelPeers marks the workers of gangs that may have more than one
	// worker: only they are published in the pipeline's EndpointSlice.
	LabelPeers = "phasegang.dev/peers"

	// FieldManager names phasegang's writes.
	FieldManager = "phasegang"
)

// Environment variables every worker gets.
const (
	EnvWorkerIndex = "PHASEGANG_WORKER_INDEX"
	EnvWorldSize   = "PHASEGANG_WORLD_SIZE"
	EnvPeers       = "PHASEGANG_PEERS"
	EnvPhase       = "PHASEGANG_PHASE"
	EnvIteration   = "PHASEGANG_ITERATION"
	EnvAttempt     = "PHASEGANG_ATTEMPT"
)

// DNSLabel shortens name to a DNS label of at most max characters,
// keeping it unique with a hash suffix when it had to be cut.
func DNSLabel(name string, max int) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:])[:8]
	cut := strings.TrimRight(name[:max-9], "-.")
	return cut + "-" + h
}

// AttemptName is "<phase>[-i<iteration>][-a<attempt>]": a phase attempt
// within its pipeline.
func AttemptName(phase string, iteration, attempt int32) string {
	n := phase
	if iteration > 0 {
		n += "-i" + strconv.Itoa(int(iteration))
	}
	if attempt > 0 {
		n += "-a" + strconv.Itoa(int(attempt))
	}
	return n
}

// InstanceName is "<pipeline>-<phase>[-i<iteration>][-a<attempt>]": the
// base of a phase attempt's pod names. It is deterministic so a restarted
// controller finds what it created instead of duplicating it.
func InstanceName(pt *v1alpha1.PhasedTraining, phase string, iteration, attempt int32) string {
	return pt.Name + "-" + AttemptName(phase, iteration, attempt)
}

// ServiceName is the pipeline's headless Service, also its worker pods'
// subdomain: a DNS-1035 label (at most 63 characters of [a-z0-9-],
// starting with a letter). A pipeline name may hold dots or start with a
// digit, so those are mapped. There is one per pipeline, not one per phase
// attempt: every Service costs the cluster its EndpointSlice object.
func ServiceName(pt *v1alpha1.PhasedTraining) string {
	n := strings.ReplaceAll(pt.Name, ".", "-")
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "pg-" + n
	}
	return DNSLabel(n, 63)
}

// PodName is worker index's pod.
func PodName(pt *v1alpha1.PhasedTraining, phase string, iteration, attempt, index int32) string {
	return DNSLabel(fmt.Sprintf("%s-%d", InstanceName(pt, phase, iteration, attempt), index), 253)
}

// Hostname is the worker's Hostname within the pipeline's Service, so
// peers are "<phase>[-i<iteration>][-a<attempt>]-<index>.<service>":
// stable, and distinct across the pipeline's phases, iterations and
// attempts (a retried gang's name never resolves to the old gang's pods).
func Hostname(phase string, iteration, attempt, index int32) string {
	return DNSLabel(fmt.Sprintf("%s-%d", AttemptName(phase, iteration, attempt), index), 63)
}

// GangKey is the engine's key of a phase attempt.
func GangKey(pt *v1alpha1.PhasedTraining, ps *v1alpha1.PhaseStatus) engine.GangKey {
	return engine.GangKey{Pipeline: pt.Namespace + "/" + pt.Name, Phase: ps.Name, Iteration: ps.Iteration, Attempt: ps.Attempt}
}
