package phases

import (
	"time"

	"github.com/expr-lang/expr/vm"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Pipeline is a compiled, valid PhasedTraining spec: the dependency DAG,
// the iterate loop and every expression compiled once. It is immutable and
// safe for concurrent use; compile it again when the spec's generation
// changes.
type Pipeline struct {
	phases []*CompiledPhase
	byName map[string]*CompiledPhase
	// loop is nil without spec.iterate.
	loop *loop
	env  *envTypes
}

type loop struct {
	// chain lists the phase indexes of iterate.phases, in spec order.
	chain         []int
	maxIterations int32
	until         *vm.Program
}

type policyKind int

const (
	policyAllWorkers policyKind = iota
	policyChief
	policyExpr
)

// CompiledPhase is one phase of a Pipeline.
type CompiledPhase struct {
	// Index is the phase's position in spec.phases.
	Index int
	// Name is the phase's name.
	Name string
	// Spec is a deep copy of the phase's spec (gang, template, outputs...).
	Spec v1alpha1.Phase
	// Path is the phase's field path, spec.phases[Index], for messages.
	Path *field.Path
	// InLoop is true for the phases of spec.iterate.phases: they run once
	// per iteration.
	InLoop bool
	// AfterLoop is true for phases outside the loop that depend, directly
	// or not, on a loop phase: they wait until the loop is done.
	AfterLoop bool
	// Timeout and StartTimeout are 0 when unset.
	Timeout, StartTimeout time.Duration
	// StartBackoffLimit is how many start failures in a row release and
	// requeue the gang before the attempt fails (spec's, or the default).
	StartBackoffLimit int32

	deps   []int
	when   *vm.Program
	policy policyKind
	expr   *vm.Program
}

// Min is the gang's minimum size.
func (c *CompiledPhase) Min() int32 { return c.Spec.Gang.Min }

// Desired is the gang's desired size (min when unset).
func (c *CompiledPhase) Desired() int32 { return c.Spec.Gang.DesiredOrMin() }

// SetSize writes a phase attempt's gang size into its worker counts
// (Min, and Desired or Min when unset), so the status can tell Starting
// from Running. It is the one writer of WorkerCounts.Min and Desired:
// the phase step when it queues an attempt or judges one whose status
// lacks them, and the driver when it records a grant.
func SetSize(w *v1alpha1.WorkerCounts, g v1alpha1.Gang) { w.Min, w.Desired = g.Min, g.DesiredOrMin() }

// DependsOn lists the names of the phases this phase waits for.
func (c *CompiledPhase) DependsOn() []string { return c.Spec.DependsOn }

// Outputs lists the declared output keys.
func (c *CompiledPhase) Outputs() []string { return c.Spec.Outputs }

// Phase returns the named phase, or nil.
func (p *Pipeline) Phase(name string) *CompiledPhase { return p.byName[name] }

// Phases returns the phases in spec order. The slice must not be modified.
func (p *Pipeline) Phases() []*CompiledPhase { return p.phases }

// Iterates reports whether the spec has an iterate loop.
func (p *Pipeline) Iterates() bool { return p.loop != nil }

// MaxIterations is iterate.maxIterations, or 1 without a loop.
func (p *Pipeline) MaxIterations() int32 {
	if p.loop == nil {
		return 1
	}
	return p.loop.maxIterations
}
