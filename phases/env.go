package phases

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// outputFunc is the hidden env entry every declared output read is rewritten
// into (see outputPatcher). It exists so that reading an output a phase never
// reported is an evaluation error instead of a silent "" (which float() would
// also reject, but == "x" would silently compare as false).
const outputFunc = "$output"

type outputFn = func(phase, key string) (string, error)

var (
	intType      = reflect.TypeOf(0)
	stringType   = reflect.TypeOf("")
	outputFnType = reflect.TypeOf(outputFn(nil))
)

// Field indexes of a phase value (phaseValueFields order).
const (
	pvState = iota
	pvWorkers
	pvSucceeded
	pvFailed
	pvRunning
	pvAttempt
	pvIteration
	pvOutputs
)

// Field indexes of the graph env (when/until).
const (
	geIteration = iota
	gePhases
	geOutput
)

// Field indexes of the policy env (successPolicy).
const (
	peWorkers = iota
	peSucceeded
	pePhaseFailed
	peRunning
	peOutputs
	peOutput
)

// envTypes holds the reflect types built for one spec. They are built with
// reflect.StructOf so that expr type-checks every name at admission: a typo
// in a phase name, a field or an output key is a compile error, not a
// runtime surprise in the middle of a week-long training run.
type envTypes struct {
	// outputs[i] is phase i's outputs struct (one string field per key).
	outputs []reflect.Type
	// keys[i] lists phase i's declared (valid, unique) output keys, in
	// field order.
	keys [][]string
	// phaseVal[i] is the type of phases.<name i>.
	phaseVal []reflect.Type
	phases   reflect.Type
	graph    reflect.Type
	policy   []reflect.Type
	// names[i] is the phase name of field P<i> of phases (only valid,
	// unique names get a field).
	names []string
	// field[i] is the field index of phase i in phases, or -1.
	field []int
	// declared[phase][key] is true for every declared output.
	declared map[string]map[string]bool
	// describe turns expr's "type struct {...} has no field x" into words.
	describe map[string]string
}

func buildEnv(names []string, keys [][]string) *envTypes {
	e := &envTypes{
		keys:     keys,
		field:    make([]int, len(names)),
		declared: map[string]map[string]bool{},
		describe: map[string]string{},
	}
	var phaseFields []reflect.StructField
	for i, name := range names {
		e.field[i] = -1
		fs := make([]reflect.StructField, 0, len(keys[i]))
		decl := map[string]bool{}
		for j, k := range keys[i] {
			fs = append(fs, reflect.StructField{Name: fmt.Sprintf("O%d", j), Type: stringType, Tag: reflect.StructTag(fmt.Sprintf("expr:%q", k))})
			decl[k] = true
		}
		out := reflect.StructOf(fs)
		e.outputs = append(e.outputs, out)
		if len(keys[i]) == 0 {
			e.describe[out.String()] = "declares no outputs (add the key to spec.phases[].outputs)"
		} else {
			e.describe[out.String()] = "declares only the outputs " + strings.Join(keys[i], ", ")
		}
		pv := reflect.StructOf([]reflect.StructField{
			{Name: "State", Type: stringType, Tag: `expr:"state"`},
			{Name: "Workers", Type: intType, Tag: `expr:"workers"`},
			{Name: "Succeeded", Type: intType, Tag: `expr:"succeeded"`},
			{Name: "Failed", Type: intType, Tag: `expr:"failed"`},
			{Name: "Running", Type: intType, Tag: `expr:"running"`},
			{Name: "Attempt", Type: intType, Tag: `expr:"attempt"`},
			{Name: "Iteration", Type: intType, Tag: `expr:"iteration"`},
			{Name: "Outputs", Type: out, Tag: `expr:"outputs"`},
		})
		e.describe[pv.String()] = "a phase has only state, workers, succeeded, failed, running, attempt, iteration and outputs"
		e.phaseVal = append(e.phaseVal, pv)
		if name == "" || e.declared[name] != nil {
			continue
		}
		e.declared[name] = decl
		e.field[i] = len(phaseFields)
		e.names = append(e.names, name)
		phaseFields = append(phaseFields, reflect.StructField{Name: fmt.Sprintf("P%d", len(phaseFields)), Type: pv, Tag: reflect.StructTag(fmt.Sprintf("expr:%q", name))})
	}
	e.phases = reflect.StructOf(phaseFields)
	sorted := append([]string(nil), e.names...)
	sort.Strings(sorted)
	e.describe[e.phases.String()] = "phases has only " + strings.Join(sorted, ", ")
	e.graph = reflect.StructOf([]reflect.StructField{
		{Name: "Iteration", Type: intType, Tag: `expr:"iteration"`},
		{Name: "Phases", Type: e.phases, Tag: `expr:"phases"`},
		{Name: "Output", Type: outputFnType, Tag: reflect.StructTag(fmt.Sprintf("expr:%q", outputFunc))},
	})
	for i := range names {
		e.policy = append(e.policy, reflect.StructOf([]reflect.StructField{
			{Name: "Workers", Type: intType, Tag: `expr:"workers"`},
			{Name: "Succeeded", Type: intType, Tag: `expr:"succeeded"`},
			{Name: "Failed", Type: intType, Tag: `expr:"failed"`},
			{Name: "Running", Type: intType, Tag: `expr:"running"`},
			{Name: "Outputs", Type: e.outputs[i], Tag: `expr:"outputs"`},
			{Name: "Output", Type: outputFnType, Tag: reflect.StructTag(fmt.Sprintf("expr:%q", outputFunc))},
		}))
	}
	return e
}

// outputPatcher rewrites every read of a declared output
// (phases.<p>.outputs.<k>, phases["p"].outputs["k"], and outputs.<k> in a
// success policy) into $output("p", "k"), which fails the evaluation when the
// value was never reported. Undeclared keys are left alone so that the type
// checker reports them.
type outputPatcher struct {
	declared map[string]map[string]bool
	// self is the phase of a success policy ("" for when/until).
	self string
}

func stringProp(n ast.Node) (string, bool) {
	s, ok := n.(*ast.StringNode)
	if !ok {
		return "", false
	}
	return s.Value, true
}

func isIdent(n ast.Node, name string) bool {
	if id, ok := n.(*ast.IdentifierNode); ok {
		return id.Value == name
	}
	// $env.phases / $env["phases"]
	if m, ok := n.(*ast.MemberNode); ok {
		if p, ok := stringProp(m.Property); ok && p == name {
			if id, ok := m.Node.(*ast.IdentifierNode); ok && id.Value == "$env" {
				return true
			}
		}
	}
	return false
}

func (o outputPatcher) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	key, ok := stringProp(m.Property)
	if !ok {
		return
	}
	phase := ""
	if o.self != "" && isIdent(m.Node, "outputs") {
		phase = o.self
	} else {
		outs, ok := m.Node.(*ast.MemberNode)
		if !ok {
			return
		}
		if p, ok := stringProp(outs.Property); !ok || p != "outputs" {
			return
		}
		ph, ok := outs.Node.(*ast.MemberNode)
		if !ok || !isIdent(ph.Node, "phases") {
			return
		}
		if phase, ok = stringProp(ph.Property); !ok {
			return
		}
	}
	if !o.declared[phase][key] {
		return
	}
	call := &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: outputFunc},
		Arguments: []ast.Node{&ast.StringNode{Value: phase}, &ast.StringNode{Value: key}},
	}
	ast.Patch(n, call)
}

// compileExpr compiles a boolean expression against env. The error message
// is expr's own (with line:column) minus the Go type dumps expr would print
// for our synthesized structs.
func (e *envTypes) compileExpr(src string, env reflect.Type, self string) (*vm.Program, error) {
	prog, err := expr.Compile(src,
		expr.Env(reflect.New(env).Elem().Interface()),
		expr.AsBool(),
		expr.Patch(outputPatcher{declared: e.declared, self: self}),
	)
	if err != nil {
		return nil, errors.New(e.exprMessage(err))
	}
	return prog, nil
}

// exprMessage formats an expr error on one line: message (line:column).
func (e *envTypes) exprMessage(err error) string {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return err.Error()
	}
	msg := fe.Message
	if strings.HasPrefix(msg, "type struct {") {
		if i := strings.LastIndex(msg, " has no field "); i > 0 {
			name := msg[i+len(" has no field "):]
			typ := strings.TrimPrefix(msg[:i], "type ")
			if d, ok := e.describe[typ]; ok {
				msg = fmt.Sprintf("unknown name %s: %s", name, d)
			} else {
				msg = "unknown name " + name
			}
		}
	}
	if fe.Line > 0 {
		return fmt.Sprintf("%s (%d:%d)", msg, fe.Line, fe.Column+1) // expr displays 1-based columns
	}
	return msg
}

// view is what an expression sees of one phase instance.
type view struct {
	state                                             v1alpha1.PhaseState
	workers, succeeded, failed, running, attempt, itr int
	outputs                                           map[string]string
	// reported is false for an instance with no status entry yet.
	reported bool
}

func (e *envTypes) setPhaseValue(v reflect.Value, i int, pv view) {
	state := pv.state
	if state == "" {
		state = v1alpha1.PhasePending
	}
	v.Field(pvState).SetString(string(state))
	v.Field(pvWorkers).SetInt(int64(pv.workers))
	v.Field(pvSucceeded).SetInt(int64(pv.succeeded))
	v.Field(pvFailed).SetInt(int64(pv.failed))
	v.Field(pvRunning).SetInt(int64(pv.running))
	v.Field(pvAttempt).SetInt(int64(pv.attempt))
	v.Field(pvIteration).SetInt(int64(pv.itr))
	// Outputs struct fields carry the value when reported so that $env
	// style whole-struct reads see something; declared reads go through
	// $output and fail when missing.
	out := v.Field(pvOutputs)
	for j, k := range e.keys[i] {
		out.Field(j).SetString(pv.outputs[k])
	}
}

// graphEnv builds the value seen by when/until.
func (e *envTypes) graphEnv(iteration int32, views []view) any {
	env := reflect.New(e.graph).Elem()
	env.Field(geIteration).SetInt(int64(iteration))
	ps := env.Field(gePhases)
	for i, f := range e.field {
		if f >= 0 {
			e.setPhaseValue(ps.Field(f), i, views[i])
		}
	}
	idx := map[string]int{}
	for i, f := range e.field {
		if f >= 0 {
			idx[e.names[f]] = i
		}
	}
	env.Field(geOutput).Set(reflect.ValueOf(outputFn(func(phase, key string) (string, error) {
		i, ok := idx[phase]
		if !ok {
			return "", fmt.Errorf("unknown phase %s", phase)
		}
		return lookupOutput(phase, key, views[i])
	})))
	return env.Interface()
}

func lookupOutput(phase, key string, v view) (string, error) {
	if val, ok := v.outputs[key]; ok {
		return val, nil
	}
	state := v.state
	if state == "" {
		state = v1alpha1.PhasePending
	}
	return "", fmt.Errorf("phases.%s.outputs.%s has no value: phase %s (%s) did not report it", phase, key, phase, state)
}

// policyEnv builds the value seen by an expression successPolicy.
func (e *envTypes) policyEnv(i int, name string, workers, succeeded, failed, running int32, outputs map[string]string) any {
	env := reflect.New(e.policy[i]).Elem()
	env.Field(peWorkers).SetInt(int64(workers))
	env.Field(peSucceeded).SetInt(int64(succeeded))
	env.Field(pePhaseFailed).SetInt(int64(failed))
	env.Field(peRunning).SetInt(int64(running))
	out := env.Field(peOutputs)
	for j, k := range e.keys[i] {
		out.Field(j).SetString(outputs[k])
	}
	env.Field(peOutput).Set(reflect.ValueOf(outputFn(func(_, key string) (string, error) {
		if val, ok := outputs[key]; ok {
			return val, nil
		}
		return "", fmt.Errorf("outputs.%s has no value: no worker of phase %s reported it yet", key, name)
	})))
	return env.Interface()
}

// run evaluates a compiled boolean program.
func (e *envTypes) run(prog *vm.Program, env any) (bool, error) {
	out, err := expr.Run(prog, env)
	if err != nil {
		return false, errors.New(e.exprMessage(err))
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("expression returned %T, not a boolean", out)
	}
	return b, nil
}
