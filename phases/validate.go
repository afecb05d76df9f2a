package phases

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Error classes reported by Validate, one per check. The CLI's invalid
// examples mirror this list (each example triggers one class); the exact
// strings are pinned in validate_test.go. Every bound is the CRD's (the
// kubebuilder markers in apis/v1alpha1), with the path the API server
// reports; test/crd checks that Validate rejects whatever the API server
// rejects.
//
//	phases-empty          spec.phases: Required value
//	phases-too-many       spec.phases: Too many (more than 32)
//	name-required         spec.phases[i].name: Required value
//	name-syntax           spec.phases[i].name: Invalid value (not a DNS-1123 label starting with a letter)
//	name-too-long         spec.phases[i].name: Invalid value (more than 32 characters)
//	name-duplicate        spec.phases[i].name: Duplicate value
//	gang-min              spec.phases[i].gang.min: Invalid value (< 1 or > 10000)
//	gang-desired          spec.phases[i].gang.desired: Invalid value (< 1, > 10000 or < min)
//	template-containers   spec.phases[i].template.spec.containers: Required value
//	template-schema       spec.phases[i].template.spec...: what the CRD's pod template schema rejects (template.go)
//	template-pod          spec.phases[i].template.spec...: what pod creation would reject (template.go)
//	template-pinning      spec.phases[i].template.spec.nodeName / schedulerName / required podAntiAffinity: conflicts with pinning workers to granted nodes (pinning.go)
//	max-retries           spec.phases[i].maxRetries: Invalid value (< 0 or > 100)
//	start-backoff-limit   spec.phases[i].startBackoffLimit: Invalid value (< 0 or > 100)
//	timeout               spec.phases[i].timeout / startTimeout: Invalid value (<= 0)
//	ref-syntax            spec.phases[i].dependsOn[j], spec.iterate.phases[j]: Invalid value (not a phase name)
//	depends-too-many      spec.phases[i].dependsOn: Too many (more than 32)
//	depends-unknown       spec.phases[i].dependsOn[j]: Invalid value: unknown phase
//	depends-self          spec.phases[i].dependsOn[j]: Invalid value: depends on itself
//	depends-duplicate     spec.phases[i].dependsOn[j]: Duplicate value
//	depends-cycle         spec.phases[i].dependsOn[j]: Invalid value: dependency cycle a → b → a
//	outputs-too-many      spec.phases[i].outputs: Too many (more than 32)
//	output-identifier     spec.phases[i].outputs[j]: Invalid value (not an identifier)
//	output-duplicate      spec.phases[i].outputs[j]: Duplicate value
//	output-too-long       spec.phases[i].outputs[j]: Invalid value (more than 63 characters)
//	expr-too-long         spec.phases[i].when / successPolicy, spec.iterate.until: Too long (more than 1024 characters)
//	when-expr             spec.phases[i].when: Invalid value (expr compile/type error)
//	policy-expr           spec.phases[i].successPolicy: Invalid value (expr error, or AllWorkers/Chief miscased)
//	priority-both         spec.priorityClassName: Forbidden (with spec.priority)
//	priority-class-too-long spec.priorityClassName: Too long (more than 253 characters)
//	queue-name            spec.queueName: Invalid value (not a DNS-1123 subdomain: a TenantQueue's name) or Too long (more than 253 characters)
//	iterate-empty         spec.iterate.phases: Required value
//	iterate-too-many      spec.iterate.phases: Too many (more than 32)
//	iterate-unknown       spec.iterate.phases[j]: Invalid value: unknown phase
//	iterate-duplicate     spec.iterate.phases[j]: Duplicate value
//	iterate-max           spec.iterate.maxIterations: Invalid value (< 1 or > 1000)
//	iterate-open          spec.iterate.phases: Invalid value (a phase outside the chain is between two chain phases)
//	until-expr            spec.iterate.until: Invalid value (expr compile/type error)
//	topology-mode         spec.phases[i].topology: Invalid value (not exactly one of required and preferred)
//	topology-level        spec.phases[i].topology.{required,preferred,sliceLevel}: Invalid value (not a label key)
//	topology-slice        spec.phases[i].topology.sliceSize: Invalid value (does not divide min and desired; sliceLevel without it)
//	topology-same-domain  spec.phases[i].topology.sameDomainAs: Invalid value (not a phase it dependsOn)
var ErrorClasses = []string{
	"phases-empty", "phases-too-many",
	"name-required", "name-syntax", "name-too-long", "name-duplicate",
	"gang-min", "gang-desired", "template-containers", "template-schema", "template-pod", "template-pinning", "max-retries", "timeout",
	"ref-syntax", "depends-too-many", "depends-unknown", "depends-self", "depends-duplicate", "depends-cycle",
	"outputs-too-many", "output-identifier", "output-duplicate", "output-too-long",
	"expr-too-long", "when-expr", "policy-expr", "priority-both", "priority-class-too-long", "queue-name",
	"iterate-empty", "iterate-too-many", "iterate-unknown", "iterate-duplicate", "iterate-max", "iterate-open", "until-expr",
	"topology-mode", "topology-level", "topology-slice", "topology-same-domain",
}

// The CRD's bounds, from the kubebuilder markers in apis/v1alpha1.
const (
	maxPhases     = 32
	maxNameLength = 32
	// maxOutputLength matches the CRD's items:MaxLength for outputs.
	maxOutputLength = 63
	// maxRefs bounds dependsOn, outputs and iterate.phases (MaxItems).
	maxRefs       = 32
	maxGang       = 10000
	maxRetries    = 100
	maxIterations = 1000
	// maxExprLength bounds when, successPolicy and until (MaxLength).
	maxExprLength = 1024
	// maxPriorityClassName is the CRD's MaxLength for priorityClassName.
	maxPriorityClassName = 253
	// maxQueueName is the CRD's MaxLength for queueName.
	maxQueueName = 253
)

var (
	// nameRE is the CRD's pattern: a DNS-1123 label that starts with a
	// letter, so that a name can never look like a number in an expression.
	nameRE       = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	identifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate returns every problem of pt's spec, each with a field path rooted
// at "spec". It is Compile without the result, so admission and the
// controller can never disagree on what is valid.
func Validate(pt *v1alpha1.PhasedTraining) field.ErrorList {
	_, errs := Compile(pt)
	return errs
}

// Compile validates pt's spec and builds its Pipeline, compiling every
// expression once. The Pipeline is nil when the list is not empty. Compile
// does not stop at the first error: a user fixing a spec wants every
// problem at once.
func Compile(pt *v1alpha1.PhasedTraining) (*Pipeline, field.ErrorList) {
	root := field.NewPath("spec")
	if pt == nil {
		return nil, field.ErrorList{field.Required(root, "a PhasedTraining is required")}
	}
	c := newCompiler(root, &pt.Spec)
	c.checkPhaseCount()
	for i := range c.spec.Phases {
		c.checkPhase(i)
	}
	c.resolveDependencies()
	c.checkCycles()
	c.resolveIterate()
	c.checkScheduling()
	// Expressions, against the types of this spec.
	c.env = buildEnv(c.names, c.keys)
	for i := range c.spec.Phases {
		c.compiled[i] = c.compilePhase(i)
	}
	c.compileLoop()
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return c.pipeline(), nil
}

// compiler is Compile's state: what each step learns of the spec that a
// later step needs, and every problem found so far, in the order found.
type compiler struct {
	spec     *v1alpha1.PhasedTrainingSpec
	root, pp *field.Path // spec and spec.phases
	errs     field.ErrorList

	// names[i] is phase i's name for lookups, "" when empty or a duplicate
	// (the first phase with a name wins); index is its inverse.
	names []string
	index map[string]int
	keys  [][]string // keys[i] are phase i's valid outputs

	deps   [][]int
	depIdx [][]int // depIdx[i][k] is the dependsOn index of deps[i][k]
	// ancestors[i][k]: phase k must end before phase i starts; nil when
	// the dependencies have a cycle.
	ancestors [][]bool

	inLoop []bool // phases named by iterate
	chain  []int  // their indices, in order

	env      *envTypes
	compiled []*CompiledPhase
	loop     *loop
}

func newCompiler(root *field.Path, spec *v1alpha1.PhasedTrainingSpec) *compiler {
	n := len(spec.Phases)
	return &compiler{
		spec: spec, root: root, pp: root.Child("phases"),
		names: make([]string, n), index: map[string]int{}, keys: make([][]string, n),
		deps: make([][]int, n), depIdx: make([][]int, n),
		inLoop: make([]bool, n), compiled: make([]*CompiledPhase, n),
	}
}

// checkPhaseCount checks the number of phases and the retention settings.
func (c *compiler) checkPhaseCount() {
	n := len(c.spec.Phases)
	if n == 0 {
		c.errs = append(c.errs, field.Required(c.pp, "must have at least one phase"))
	}
	if n > maxPhases {
		c.errs = append(c.errs, field.TooMany(c.pp, n, maxPhases))
	}
	c.errs = append(c.errs, validateRetention(c.root, c.spec)...)
}

// checkPhase checks phase i's own fields and records its name and outputs
// for the steps that resolve references to them.
func (c *compiler) checkPhase(i int) {
	ph := &c.spec.Phases[i]
	p := c.pp.Index(i)
	c.errs = append(c.errs, validateName(p.Child("name"), ph.Name)...)
	if ph.Name != "" {
		if _, dup := c.index[ph.Name]; dup {
			c.errs = append(c.errs, field.Duplicate(p.Child("name"), ph.Name))
		} else {
			c.index[ph.Name] = i
			c.names[i] = ph.Name
		}
	}

	c.errs = append(c.errs, validateGang(p.Child("gang"), ph.Gang)...)
	c.errs = append(c.errs, validateTemplate(p.Child("template"), &ph.Template)...)
	c.errs = appendIf(c.errs, inRange(p.Child("maxRetries"), ph.MaxRetries, 0, maxRetries))
	if ph.StartBackoffLimit != nil {
		c.errs = appendIf(c.errs, inRange(p.Child("startBackoffLimit"), *ph.StartBackoffLimit, 0, maxRetries))
	}
	if ph.Timeout != nil && ph.Timeout.Duration <= 0 {
		c.errs = append(c.errs, field.Invalid(p.Child("timeout"), ph.Timeout.Duration.String(), "must be greater than 0 when set"))
	}
	if ph.StartTimeout != nil && ph.StartTimeout.Duration <= 0 {
		c.errs = append(c.errs, field.Invalid(p.Child("startTimeout"), ph.StartTimeout.Duration.String(), "must be greater than 0 when set"))
	}
	c.checkOutputs(i)
	c.errs = append(c.errs, validateTopology(p, ph)...)
}

// validateTopology checks phase ph's topology (at p, the phase's path):
// one of required and preferred, label keys as levels, a sliceSize that
// divides the gang's sizes, and a sameDomainAs that names a phase ph
// dependsOn (its grant has ended by the time ph queues, and its status
// says where it ran).
func validateTopology(p *field.Path, ph *v1alpha1.Phase) field.ErrorList {
	t := ph.Topology
	if t == nil {
		return nil
	}
	tp := p.Child("topology")
	var errs field.ErrorList
	if (t.Required == "") == (t.Preferred == "") {
		errs = append(errs, field.Invalid(tp, "", "set exactly one of topology.required and topology.preferred"))
	}
	for _, l := range []struct {
		name, level string
	}{{"required", t.Required}, {"preferred", t.Preferred}, {"sliceLevel", t.SliceLevel}} {
		if l.level == "" {
			continue
		}
		if msgs := validation.IsQualifiedName(l.level); len(msgs) > 0 {
			errs = append(errs, field.Invalid(tp.Child(l.name), l.level, "must be a node label key (a topology level): "+strings.Join(msgs, "; ")))
		}
	}
	if t.SliceLevel != "" && t.SliceSize == nil {
		errs = append(errs, field.Invalid(tp.Child("sliceLevel"), t.SliceLevel, "sliceLevel needs sliceSize"))
	}
	if k := t.SliceSize; k != nil {
		if e := inRange(tp.Child("sliceSize"), *k, 1, maxGang); e != nil {
			errs = append(errs, e)
		} else if ph.Gang.Min%*k != 0 || ph.Gang.DesiredOrMin()%*k != 0 {
			errs = append(errs, field.Invalid(tp.Child("sliceSize"), *k,
				fmt.Sprintf("must divide gang.min (%d) and gang.desired (%d): the workers are placed in whole slices", ph.Gang.Min, ph.Gang.DesiredOrMin())))
		}
	}
	if d := t.SameDomainAs; d != "" && !slices.Contains(ph.DependsOn, d) {
		errs = append(errs, field.Invalid(tp.Child("sameDomainAs"), d,
			fmt.Sprintf("must name a phase this phase dependsOn %v: its workers must have run before this phase queues", ph.DependsOn)))
	}
	return errs
}

// checkOutputs checks phase i's outputs and records the valid ones.
func (c *compiler) checkOutputs(i int) {
	ph := &c.spec.Phases[i]
	p := c.pp.Index(i)
	c.errs = appendIf(c.errs, tooMany(p.Child("outputs"), len(ph.Outputs), maxRefs))
	seen := map[string]bool{}
	for j, k := range ph.Outputs {
		kp := p.Child("outputs").Index(j)
		switch {
		case len(k) > maxOutputLength:
			c.errs = append(c.errs, field.Invalid(kp, k, fmt.Sprintf("must be at most %d characters", maxOutputLength)))
		case !identifierRE.MatchString(k):
			c.errs = append(c.errs, field.Invalid(kp, k, "must be an identifier: a letter or '_' followed by letters, digits or '_'"))
		case seen[k]:
			c.errs = append(c.errs, field.Duplicate(kp, k))
		default:
			seen[k] = true
			c.keys[i] = append(c.keys[i], k)
		}
	}
}

// resolveDependencies turns every phase's dependsOn names into indices.
func (c *compiler) resolveDependencies() {
	for i := range c.spec.Phases {
		ph := &c.spec.Phases[i]
		c.errs = appendIf(c.errs, tooMany(c.pp.Index(i).Child("dependsOn"), len(ph.DependsOn), maxRefs))
		seen := map[string]bool{}
		for j, d := range ph.DependsOn {
			dp := c.pp.Index(i).Child("dependsOn").Index(j)
			t, ok := c.index[d]
			switch {
			case !isName(d):
				c.errs = append(c.errs, field.Invalid(dp, d, notAName(d, c.names)))
			case d == ph.Name:
				c.errs = append(c.errs, field.Invalid(dp, d, "a phase cannot depend on itself"))
			case seen[d]:
				c.errs = append(c.errs, field.Duplicate(dp, d))
			case !ok:
				c.errs = append(c.errs, field.Invalid(dp, d, unknownPhase(d, c.names)))
			default:
				c.deps[i] = append(c.deps[i], t)
				c.depIdx[i] = append(c.depIdx[i], j)
			}
			seen[d] = true
		}
	}
}

// checkCycles reports every dependency cycle and, when there is none,
// computes the ancestors.
func (c *compiler) checkCycles() {
	cyclic := false
	for _, cy := range findCycles(c.deps) {
		cyclic = true
		path := make([]string, len(cy.path))
		for k, i := range cy.path {
			path[k] = c.spec.Phases[i].Name
		}
		from := cy.from
		j := c.depIdx[from][cy.edge]
		c.errs = append(c.errs, field.Invalid(c.pp.Index(from).Child("dependsOn").Index(j), c.spec.Phases[from].DependsOn[j],
			"dependency cycle "+strings.Join(path, " → ")))
	}
	if !cyclic {
		c.ancestors = closure(c.deps)
	}
}

// resolveIterate marks the phases iterate names as in the loop and checks
// that the loop is closed.
func (c *compiler) resolveIterate() {
	it := c.spec.Iterate
	if it == nil {
		return
	}
	ip := c.root.Child("iterate")
	if len(it.Phases) == 0 {
		c.errs = append(c.errs, field.Required(ip.Child("phases"), "must name at least one phase to repeat"))
	}
	c.errs = appendIf(c.errs, tooMany(ip.Child("phases"), len(it.Phases), maxRefs))
	seen := map[string]bool{}
	for j, name := range it.Phases {
		jp := ip.Child("phases").Index(j)
		i, ok := c.index[name]
		switch {
		case !isName(name):
			c.errs = append(c.errs, field.Invalid(jp, name, notAName(name, c.names)))
		case seen[name]:
			c.errs = append(c.errs, field.Duplicate(jp, name))
		case !ok:
			c.errs = append(c.errs, field.Invalid(jp, name, unknownPhase(name, c.names)))
		default:
			c.inLoop[i] = true
		}
		seen[name] = true
	}
	for i := range c.inLoop {
		if c.inLoop[i] {
			c.chain = append(c.chain, i)
		}
	}
	c.errs = appendIf(c.errs, inRange(ip.Child("maxIterations"), it.MaxIterations, 1, maxIterations))
	if c.ancestors != nil {
		c.errs = append(c.errs, checkClosed(ip.Child("phases"), c.spec, it.Phases, c.inLoop, c.ancestors)...)
	}
}

// checkScheduling checks the pipeline's priority and queue.
func (c *compiler) checkScheduling() {
	spec, root := c.spec, c.root
	if len(spec.PriorityClassName) > 0 && spec.Priority != nil {
		c.errs = append(c.errs, field.Forbidden(root.Child("priorityClassName"), "may not be set together with spec.priority: set one of them"))
	}
	c.errs = appendIf(c.errs, tooLong(root.Child("priorityClassName"), spec.PriorityClassName, maxPriorityClassName))
	if q := spec.QueueName; q != "" {
		if e := tooLong(root.Child("queueName"), q, maxQueueName); e != nil {
			c.errs = append(c.errs, e)
		} else if !v1alpha1.IsQueueName(q) {
			c.errs = append(c.errs, field.Invalid(root.Child("queueName"), q, "must be a TenantQueue's name: lowercase letters, digits, '-' and '.'"))
		}
	}
}

// compilePhase builds phase i's CompiledPhase, compiling its when and
// successPolicy expressions.
func (c *compiler) compilePhase(i int) *CompiledPhase {
	ph := &c.spec.Phases[i]
	p := c.pp.Index(i)
	cp := &CompiledPhase{Index: i, Name: ph.Name, Spec: *ph.DeepCopy(), Path: p, InLoop: c.inLoop[i], deps: c.deps[i]}
	if ph.Timeout != nil {
		cp.Timeout = ph.Timeout.Duration
	}
	if ph.StartTimeout != nil {
		cp.StartTimeout = ph.StartTimeout.Duration
	}
	cp.StartBackoffLimit = v1alpha1.DefaultStartBackoffLimit
	if ph.StartBackoffLimit != nil {
		cp.StartBackoffLimit = *ph.StartBackoffLimit
	}
	if e := tooLong(p.Child("when"), ph.When, maxExprLength); e != nil {
		c.errs = append(c.errs, e)
	} else if ph.When != "" {
		prog, err := c.env.compileExpr(ph.When, c.env.graph, "")
		if err != nil {
			c.errs = append(c.errs, field.Invalid(p.Child("when"), ph.When, err.Error()))
		}
		cp.when = prog
	}
	c.compilePolicy(i, cp)
	return cp
}

// compilePolicy sets cp's success policy from phase i's successPolicy: a
// keyword or a boolean expression.
func (c *compiler) compilePolicy(i int, cp *CompiledPhase) {
	ph := &c.spec.Phases[i]
	p := c.pp.Index(i).Child("successPolicy")
	switch ph.SuccessPolicy {
	case "", v1alpha1.SuccessPolicyAllWorkers:
		cp.policy = policyAllWorkers
		return
	case v1alpha1.SuccessPolicyChief:
		cp.policy = policyChief
		return
	}
	cp.policy = policyExpr
	if e := tooLong(p, ph.SuccessPolicy, maxExprLength); e != nil {
		c.errs = append(c.errs, e)
		return
	}
	if hint := miscased(ph.SuccessPolicy); hint != "" {
		c.errs = append(c.errs, field.Invalid(p, ph.SuccessPolicy,
			fmt.Sprintf("must be AllWorkers, Chief or a boolean expression (did you mean %s?)", hint)))
		return
	}
	prog, err := c.env.compileExpr(ph.SuccessPolicy, c.env.policy[i], c.names[i])
	if err != nil {
		c.errs = append(c.errs, field.Invalid(p, ph.SuccessPolicy, err.Error()))
	}
	cp.expr = prog
}

// compileLoop builds the loop of iterate, compiling its until expression.
func (c *compiler) compileLoop() {
	it := c.spec.Iterate
	if it == nil {
		return
	}
	c.loop = &loop{chain: c.chain, maxIterations: it.MaxIterations}
	up := c.root.Child("iterate", "until")
	if e := tooLong(up, it.Until, maxExprLength); e != nil {
		c.errs = append(c.errs, e)
	} else if it.Until != "" {
		prog, err := c.env.compileExpr(it.Until, c.env.graph, "")
		if err != nil {
			c.errs = append(c.errs, field.Invalid(up, it.Until, err.Error()))
		}
		c.loop.until = prog
	}
}

// pipeline assembles the Pipeline of a spec without problems, marking the
// phases outside the loop that must wait for it.
func (c *compiler) pipeline() *Pipeline {
	pl := &Pipeline{phases: c.compiled, byName: map[string]*CompiledPhase{}, loop: c.loop, env: c.env}
	for i, cp := range c.compiled {
		pl.byName[cp.Name] = cp
		if !cp.InLoop {
			for _, k := range c.chain {
				if c.ancestors[i][k] {
					cp.AfterLoop = true
				}
			}
		}
	}
	return pl
}

// nameRule is what nameRE and maxNameLength allow, in words.
const nameRule = "must be lowercase letters, digits and '-', start with a letter and end with a letter or digit (e.g. 'train', 'eval-2')"

func validateName(p *field.Path, name string) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "every phase needs a name")}
	case len(name) > maxNameLength:
		return field.ErrorList{field.Invalid(p, name, fmt.Sprintf("must be at most %d characters", maxNameLength))}
	case !nameRE.MatchString(name):
		return field.ErrorList{field.Invalid(p, name, nameRule)}
	}
	return nil
}

// isName reports whether a reference (a dependsOn or iterate.phases entry)
// could name a phase at all; the CRD checks the references' pattern and
// length as it checks the names'.
func isName(name string) bool { return len(name) <= maxNameLength && nameRE.MatchString(name) }

// notAName says why a reference is not a phase name, suggesting a close one:
// "Train" is most likely "train".
func notAName(name string, names []string) string {
	msg := "not a phase name: " + nameRule
	if len(name) > maxNameLength {
		msg = fmt.Sprintf("not a phase name: must be at most %d characters", maxNameLength)
	}
	if s := suggest(name, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func validateGang(p *field.Path, g v1alpha1.Gang) field.ErrorList {
	errs := appendIf(nil, inRange(p.Child("min"), g.Min, 1, maxGang))
	if g.Desired == nil {
		return errs
	}
	d := *g.Desired
	if d == g.Min {
		// SetDefaults makes desired = min: one mistake, one error (min's).
		return errs
	}
	if e := inRange(p.Child("desired"), d, 1, maxGang); e != nil {
		return append(errs, e)
	}
	if d < g.Min {
		errs = append(errs, field.Invalid(p.Child("desired"), d,
			fmt.Sprintf("must be greater than or equal to gang.min (%d)", g.Min)))
	}
	return errs
}

// inRange checks an integer against the CRD's Minimum and Maximum.
func inRange(p *field.Path, v, lo, hi int32) *field.Error {
	switch {
	case v < lo:
		return field.Invalid(p, v, fmt.Sprintf("must be at least %d", lo))
	case v > hi:
		return field.Invalid(p, v, fmt.Sprintf("must be at most %d", hi))
	}
	return nil
}

// tooLong checks a string against the CRD's MaxLength, which the API server
// counts in characters, not bytes.
func tooLong(p *field.Path, s string, max int) *field.Error {
	if utf8.RuneCountInString(s) > max {
		return field.TooLongCharacters(p, s, max)
	}
	return nil
}

// tooMany checks a list against the CRD's MaxItems.
func tooMany(p *field.Path, n, max int) *field.Error {
	if n > max {
		return field.TooMany(p, n, max)
	}
	return nil
}

// appendIf appends e unless it is nil, so that single checks read as one line.
func appendIf(errs field.ErrorList, e *field.Error) field.ErrorList {
	if e == nil {
		return errs
	}
	return append(errs, e)
}

func miscased(policy string) string {
	for _, k := range []string{v1alpha1.SuccessPolicyAllWorkers, v1alpha1.SuccessPolicyChief} {
		if strings.EqualFold(policy, k) {
			return k
		}
	}
	return ""
}

// unknownPhase says a name is unknown, suggesting a close one: most unknown
// names are typos.
func unknownPhase(name string, names []string) string {
	if s := suggest(name, names); s != "" {
		return fmt.Sprintf("unknown phase (did you mean %q?)", s)
	}
	return "unknown phase"
}

// suggest returns the phase name closest to name, if it is close enough to
// be a typo.
func suggest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if n == "" {
			continue
		}
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

type cycle struct {
	// path lists phase indexes in run order, first == last.
	path []int
	// from is the phase whose dependsOn entry closes the cycle, edge the
	// index of that entry in deps[from].
	from, edge int
}

// findCycles reports one cycle per back edge of a depth-first search that
// follows dependsOn in spec order. The path is printed in run order
// (a → b means b depends on a), which is how users think of a pipeline.
func findCycles(deps [][]int) []cycle {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(deps))
	var stack []int
	var out []cycle
	var visit func(i int)
	visit = func(i int) {
		color[i] = grey
		stack = append(stack, i)
		for k, d := range deps[i] {
			switch color[d] {
			case white:
				visit(d)
			case grey:
				start := len(stack) - 1
				for stack[start] != d {
					start--
				}
				path := append(append([]int(nil), stack[start:]...), d)
				// stack is in dependsOn order (i depends on stack[top-1]...);
				// reverse to run order.
				for l, r := 0, len(path)-1; l < r; l, r = l+1, r-1 {
					path[l], path[r] = path[r], path[l]
				}
				out = append(out, cycle{path: path, from: i, edge: k})
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
	}
	for i := range deps {
		if color[i] == white {
			visit(i)
		}
	}
	return out
}

// closure returns anc[i][k] = true when phase k is a (transitive)
// dependency of phase i. deps must be acyclic.
func closure(deps [][]int) [][]bool {
	n := len(deps)
	anc := make([][]bool, n)
	done := make([]bool, n)
	var visit func(i int)
	visit = func(i int) {
		if done[i] {
			return
		}
		done[i] = true
		anc[i] = make([]bool, n)
		for _, d := range deps[i] {
			visit(d)
			anc[i][d] = true
			for k, ok := range anc[d] {
				if ok {
					anc[i][k] = true
				}
			}
		}
	}
	for i := range deps {
		visit(i)
	}
	return anc
}

// checkClosed rejects a phase outside the chain that is both downstream of
// a chain phase and upstream of one: it would have to run inside every
// iteration, yet it is declared to run once.
func checkClosed(p *field.Path, spec *v1alpha1.PhasedTrainingSpec, chainNames []string, inLoop []bool, anc [][]bool) field.ErrorList {
	var errs field.ErrorList
	for x := range spec.Phases {
		if inLoop[x] {
			continue
		}
		up, down := -1, -1
		for k := range spec.Phases {
			if !inLoop[k] {
				continue
			}
			if up < 0 && anc[x][k] {
				up = k
			}
			if down < 0 && anc[k][x] {
				down = k
			}
		}
		if up >= 0 && down >= 0 {
			name := spec.Phases[x].Name
			errs = append(errs, field.Invalid(p, chainNames, fmt.Sprintf(
				"phase %s runs after loop phase %s and before loop phase %s, so it would have to run inside the loop: add it to iterate.phases or remove one of those dependencies",
				name, spec.Phases[up].Name, spec.Phases[down].Name)))
		}
	}
	return errs
}
