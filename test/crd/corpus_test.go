package crd_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestGeneratedCorpus keeps phases.Validate (with Decode, as `phasegang
// validate` runs them) a superset of the CRD without a hand-kept list: it
// walks the generated CRD's schema and, for every constraint it finds
// (each minimum and maximum, length, pattern, item count, required field,
// list-map or list-set key, in the PhasedTraining's own fields and in the
// embedded pod template), builds one object that breaks exactly that
// constraint, by mutating a valid pipeline. Every CEL rule gets a
// hand-written violation in celViolations, and the test fails when a rule
// has none. For every object:
//
//   - the API server must reject it (else the generator is wrong), and
//   - `phasegang validate` must reject it too, with an error at, under or
//     above the path of each of the API server's errors, so that a new
//     marker, a raised bound or a k8s.io/api upgrade that phases.Validate
//     does not follow fails here, naming the constraint.
func TestGeneratedCorpus(t *testing.T) {
	s := newAPIServer(t)
	base := toUnstructured(t, pipeline())
	if errs := s.create(runtime.DeepCopyJSON(base)); len(errs) > 0 {
		t.Fatalf("the base object is invalid: %v", errs.ToAggregate())
	}
	g := &generator{}
	g.walk(site{}, s.structural)
	for _, r := range g.rules {
		if _, ok := celViolations[r]; !ok {
			t.Errorf("CEL rule %s has no violation in celViolations", r)
		}
	}
	for r, edit := range celViolations {
		if !slices.Contains(g.rules, r) {
			t.Errorf("celViolations[%q]: no such rule in the CRD", r)
			continue
		}
		g.out = append(g.out, violation{name: r, edit: edit})
	}
	t.Logf("%d violations", len(g.out))
	for _, v := range g.out {
		t.Run(v.name, func(t *testing.T) {
			obj := runtime.DeepCopyJSON(base)
			v.edit(obj)
			api := s.create(runtime.DeepCopyJSON(obj))
			if len(api) == 0 {
				t.Fatalf("the API server accepts it; the generator did not break the constraint")
			}
			got := local(t, obj)
			if len(got) == 0 {
				t.Fatalf("the API server rejects it, phasegang validate does not:\n%v", api.ToAggregate())
			}
			var localPaths []string
			for _, l := range got {
				localPaths = append(localPaths, errorPath(l))
			}
			for _, e := range api {
				if !slices.ContainsFunc(localPaths, func(p string) bool { return related(e.Field, p) }) {
					t.Errorf("API server error %q has no phasegang validate error on its path; phasegang validate says:\n%s",
						e.Error(), strings.Join(got, "\n"))
				}
			}
		})
	}
}

// celViolations breaks each CEL rule of the CRD, keyed by the rule's schema
// path and message (see generator.walk).
var celViolations = map[string]func(obj map[string]any){
	".spec: set at most one of priority and priorityClassName": func(obj map[string]any) {
		spec(obj)["priority"] = int64(1)
		spec(obj)["priorityClassName"] = "high"
	},
	".spec: every iterate.phases entry must name a phase of spec.phases": func(obj map[string]any) {
		spec(obj)["iterate"].(map[string]any)["phases"] = []any{"train", "valdate"}
	},
	".spec: every dependsOn entry must name a phase of spec.phases": func(obj map[string]any) {
		phase(obj, 2)["dependsOn"] = []any{"validate", "tset"}
	},
	".spec.phases[]: a phase cannot depend on itself": func(obj map[string]any) {
		phase(obj, 1)["dependsOn"] = []any{"validate"}
	},
	".spec.phases[]: must have at least one container": func(obj map[string]any) {
		delete(phase(obj, 1)["template"].(map[string]any), "spec")
	},
	".spec.phases[].gang: gang.desired must be greater than or equal to gang.min": func(obj map[string]any) {
		phase(obj, 0)["gang"] = map[string]any{"min": int64(4), "desired": int64(3)}
	},
	".spec.phases[].startTimeout: must be a duration greater than 0": func(obj map[string]any) {
		phase(obj, 0)["startTimeout"] = "10 minutes"
	},
	".spec.phases[].timeout: must be a duration greater than 0": func(obj map[string]any) {
		phase(obj, 2)["timeout"] = "0s"
	},
	".spec.phases[]: topology.sliceSize must divide gang.min and gang.desired": func(obj map[string]any) {
		phase(obj, 0)["topology"] = map[string]any{"preferred": "example.com/rack", "sliceSize": int64(3)}
	},
	".spec.phases[]: topology.sameDomainAs must name a phase this phase dependsOn": func(obj map[string]any) {
		phase(obj, 2)["topology"] = map[string]any{"required": "example.com/rack", "sameDomainAs": "train"}
	},
	".spec.phases[].topology: set exactly one of topology.required and topology.preferred": func(obj map[string]any) {
		phase(obj, 0)["topology"] = map[string]any{"sliceSize": int64(2)}
	},
	".spec.phases[].topology: sliceLevel needs sliceSize": func(obj map[string]any) {
		phase(obj, 1)["topology"] = map[string]any{"preferred": "example.com/rack", "sliceLevel": "kubernetes.io/hostname"}
	},
}

func spec(obj map[string]any) map[string]any { return obj["spec"].(map[string]any) }

// errorPath is the field path of one line of local's output: a Decode
// error ("spec.x: invalid duration ...", `unknown field "spec.x"`) or a
// phases.Validate one ("spec.x: Invalid value"). Map keys are written as
// the API server writes them (requests.nvidia.com/gpu, not
// requests[nvidia.com/gpu]).
func errorPath(line string) string {
	p, _, _ := strings.Cut(line, ": ")
	if rest, ok := strings.CutPrefix(line, "unknown field "); ok {
		p = strings.Trim(rest, `"`)
	}
	return mapKeyRE.ReplaceAllString(p, ".$1")
}

var mapKeyRE = regexp.MustCompile(`\[([^\]0-9][^\]]*)\]`)

// related reports whether two field paths lie on one path: the same field,
// or one inside the other (the API server reports a duplicate list-map key
// at the entry, phases.Validate at the key's field; a forbidden list is
// reported above the entries the schema checks).
func related(a, b string) bool {
	inside := func(x, y string) bool {
		return strings.HasPrefix(x, y) && (len(x) == len(y) || x[len(y)] == '.' || x[len(y)] == '[')
	}
	return inside(a, b) || inside(b, a)
}

// violation is one bad object of the corpus: a valid pipeline with edit
// applied.
type violation struct {
	name string
	edit func(obj map[string]any)
}

// generator walks the structural schema and collects a violation per
// constraint, and the CEL rules it meets.
type generator struct {
	out   []violation
	rules []string
}

// site is a place in the object the schema describes: the steps to it from
// the root (a string key or an int index) and the schema of the value
// after each step.
type site struct {
	steps []any
	nodes []*structuralschema.Structural
	path  string // for names: .spec.phases[].gang.min
}

func (st site) then(step any, node *structuralschema.Structural, name string) site {
	return site{
		steps: append(slices.Clip(st.steps), step),
		nodes: append(slices.Clip(st.nodes), node),
		path:  st.path + name,
	}
}

func (g *generator) walk(st site, node *structuralschema.Structural) {
	g.constraints(st, node)
	for _, v := range node.XValidations {
		if strings.Contains(v.Rule, "oldSelf") {
			// A transition rule runs on updates only; a create cannot
			// break it (TestImmutableQueueName does, with an update).
			continue
		}
		g.rules = append(g.rules, st.path+": "+v.Message)
	}
	for _, name := range slices.Sorted(maps.Keys(node.Properties)) {
		// metadata is ObjectMeta's, validated by its own code; the API
		// server ignores status on create.
		if len(st.steps) == 0 && name != "spec" {
			continue
		}
		child := node.Properties[name]
		g.walk(st.then(name, &child, "."+name), &child)
	}
	if node.Items != nil {
		g.walk(st.then(0, node.Items, "[]"), node.Items)
	}
	if ap := node.AdditionalProperties; ap != nil && ap.Structural != nil {
		g.walk(st.then("a", ap.Structural, "{}"), ap.Structural)
	}
}

// constraints adds a violation for each constraint of one node.
func (g *generator) constraints(st site, node *structuralschema.Structural) {
	add := func(what string, edit func(obj map[string]any)) {
		g.out = append(g.out, violation{name: strings.TrimSpace(st.path + " " + what), edit: edit})
	}
	set := func(what string, value func() any) {
		add(what, func(obj map[string]any) { st.set(obj, value()) })
	}
	if vv := node.ValueValidation; vv != nil {
		if vv.Maximum != nil {
			set(fmt.Sprintf("maximum %v", *vv.Maximum), func() any { return int64(*vv.Maximum) + 1 })
		}
		if vv.Minimum != nil {
			set(fmt.Sprintf("minimum %v", *vv.Minimum), func() any { return int64(*vv.Minimum) - 1 })
		}
		if vv.MaxLength != nil {
			set(fmt.Sprintf("maxLength %d", *vv.MaxLength), func() any { return strings.Repeat("a", int(*vv.MaxLength)+1) })
		}
		if vv.MinLength != nil && *vv.MinLength > 0 {
			set(fmt.Sprintf("minLength %d", *vv.MinLength), func() any { return strings.Repeat("a", int(*vv.MinLength)-1) })
		}
		if vv.Pattern != "" {
			set("pattern", func() any { return notMatching(vv.Pattern) })
		}
		if len(vv.Enum) > 0 {
			set("enum", func() any { return "not-one-of-the-enum" })
		}
		if vv.MaxItems != nil {
			set(fmt.Sprintf("maxItems %d", *vv.MaxItems), func() any { return distinctItems(node, int(*vv.MaxItems)+1) })
		}
		if vv.MinItems != nil && *vv.MinItems > 0 {
			set(fmt.Sprintf("minItems %d", *vv.MinItems), func() any { return distinctItems(node, int(*vv.MinItems)-1) })
		}
		for _, name := range vv.Required {
			add("required "+name, func(obj map[string]any) { delete(st.reach(obj).(map[string]any), name) })
		}
	}
	if lt := node.XListType; lt != nil && (*lt == "map" || *lt == "set") {
		add("list-"+*lt+" duplicate", func(obj map[string]any) {
			e := minimal(node.Items)
			if l, ok := st.get(obj).([]any); ok && len(l) > 0 {
				e = l[0]
			}
			st.set(obj, []any{e, runtime.DeepCopyJSONValue(e)})
		})
	}
}

// get returns the value at the site, nil when it is missing.
func (st site) get(obj map[string]any) any {
	var cur any = obj
	for _, step := range st.steps {
		cur = lookup(cur, step)
		if cur == nil {
			return nil
		}
	}
	return cur
}

// reach returns the value at the site, creating it and what leads to it
// with minimal values where the object has none.
func (st site) reach(obj map[string]any) any {
	var cur any = obj
	for i, step := range st.steps {
		next := lookup(cur, step)
		if next == nil {
			next = minimal(st.nodes[i])
			store(cur, step, next)
		}
		if l, ok := next.([]any); ok && len(l) == 0 && i+1 < len(st.steps) {
			// An empty list on the way: give it the entry the next
			// step goes into.
			next = []any{minimal(st.nodes[i].Items)}
			store(cur, step, next)
		}
		cur = next
	}
	return cur
}

// set replaces the value at the site; an entry of a missing or empty list
// becomes the list's only entry.
func (st site) set(obj map[string]any, v any) {
	parent := site{steps: st.steps[:len(st.steps)-1], nodes: st.nodes[:len(st.nodes)-1]}
	container := parent.reach(obj)
	if l, ok := container.([]any); ok && len(l) == 0 {
		parent.set(obj, []any{v})
		return
	}
	store(container, st.steps[len(st.steps)-1], v)
}

func lookup(cur, step any) any {
	switch c := cur.(type) {
	case map[string]any:
		return c[step.(string)]
	case []any:
		if i := step.(int); i < len(c) {
			return c[i]
		}
	}
	return nil
}

// store sets cur[step]; a list index is always 0, which reach makes exist.
func store(cur, step any, v any) {
	switch c := cur.(type) {
	case map[string]any:
		c[step.(string)] = v
	case []any:
		c[step.(int)] = v
	}
}

// minimal is the smallest value the schema accepts: an object with its
// required fields, an empty list, and scalars that meet their node's bounds
// and pattern.
func minimal(s *structuralschema.Structural) any {
	if s == nil {
		return map[string]any{}
	}
	if s.XIntOrString {
		return "1"
	}
	vv := s.ValueValidation
	if vv == nil {
		vv = &structuralschema.ValueValidation{}
	}
	switch s.Type {
	case "object", "":
		m := map[string]any{}
		for _, name := range vv.Required {
			child := s.Properties[name]
			m[name] = minimal(&child)
		}
		return m
	case "array":
		if vv.MinItems != nil && *vv.MinItems > 0 {
			return distinctItems(s, int(*vv.MinItems))
		}
		return []any{}
	case "string":
		if len(vv.Enum) > 0 {
			return vv.Enum[0].Object
		}
		return stringLike(vv, 0)
	case "integer":
		v := int64(1)
		if vv.Minimum != nil && float64(v) < *vv.Minimum {
			v = int64(*vv.Minimum)
		}
		if vv.Maximum != nil && float64(v) > *vv.Maximum {
			v = int64(*vv.Maximum)
		}
		return v
	case "number":
		return int64(1)
	case "boolean":
		return false
	}
	return nil
}

// stringLike is the i-th of a family of distinct strings that meet the
// node's pattern and lengths ("a0", "a1", ... match every name pattern of
// the CRD).
func stringLike(vv *structuralschema.ValueValidation, i int) string {
	for _, c := range []string{fmt.Sprintf("a%d", i), fmt.Sprint(i + 1), fmt.Sprintf("a%d.b", i)} {
		if vv.Pattern == "" || regexp.MustCompile(vv.Pattern).MatchString(c) {
			if vv.MinLength != nil && int64(len(c)) < *vv.MinLength {
				c += strings.Repeat("a", int(*vv.MinLength)-len(c))
			}
			return c
		}
	}
	panic("no string matches " + vv.Pattern)
}

// distinctItems is a list of n entries that differ in their list-map keys
// (or, for a list of scalars, in value), so that only the count is wrong.
func distinctItems(list *structuralschema.Structural, n int) []any {
	items := list.Items
	out := make([]any, n)
	for i := range n {
		switch {
		case items.Type == "string":
			vv := items.ValueValidation
			if vv == nil {
				vv = &structuralschema.ValueValidation{}
			}
			out[i] = stringLike(vv, i)
		case items.Type == "integer":
			out[i] = int64(i + 1)
		default:
			e := minimal(items).(map[string]any)
			for _, k := range list.XListMapKeys {
				child := items.Properties[k]
				if child.Type == "integer" {
					e[k] = int64(i + 1)
				} else {
					vv := child.ValueValidation
					if vv == nil {
						vv = &structuralschema.ValueValidation{}
					}
					e[k] = stringLike(vv, i)
				}
			}
			out[i] = e
		}
	}
	return out
}

// notMatching is a string that does not match pattern.
func notMatching(pattern string) string {
	re := regexp.MustCompile(pattern)
	for _, c := range []string{"-", "A-", "a b", "@"} {
		if !re.MatchString(c) {
			return c
		}
	}
	panic("every candidate matches " + pattern)
}
