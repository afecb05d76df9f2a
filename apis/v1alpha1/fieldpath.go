package v1alpha1

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The JSON decoder stops at the first value it cannot decode, and for a
// type that decodes itself (a duration, a quantity) it returns that type's
// error without saying where the value was: `time: unknown unit "min" in
// duration "5min"` in a file of thirty phases. docWalker walks the document
// a second time, as untyped JSON next to the Go type it decodes into, and
// finds every such value with its field path. It also finds the required
// fields a document leaves out, which the API server rejects and the typed
// object cannot show (a missing container name decodes to "").

// docProblems returns the document's undecodable values, unknown fields and
// missing required fields, each naming its path
// (spec.phases[0].startTimeout), for a document that decodes into a t.
func docProblems(doc map[string]any, t reflect.Type) (invalid, unknown, missing []error) {
	w := &docWalker{}
	w.object(nil, doc, t, true)
	return w.invalid, w.unknown, w.missing
}

// InvalidValues returns the values of a YAML or JSON document that do not
// decode into a t, each naming its field path. It is for decoders of other
// documents that embed these types (the simulator's scenarios), whose own
// errors say only `time: unknown unit "min"`.
func InvalidValues(doc []byte, t reflect.Type) []error {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil
	}
	var obj map[string]any
	if kjson.UnmarshalCaseSensitivePreserveInts(js, &obj) != nil {
		return nil
	}
	w := &docWalker{}
	w.object(nil, obj, t, false)
	return w.invalid
}

type docWalker struct {
	invalid, unknown, missing []error
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// quantityRE is the pattern the CRD gives every quantity (from
// resource.Quantity's OpenAPI definition). Go's parser is laxer: it reads
// "-", "+" and "." as 0, which the API server rejects.
var quantityRE = regexp.MustCompile(`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`)

// decodesItself reports whether t has its own UnmarshalJSON; such a value
// is decoded whole, as one leaf.
func decodesItself(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// value walks v, which decodes into a t. required is false below metadata
// and status, which the API server validates by other rules or ignores on
// create.
func (w *docWalker) value(p *field.Path, v any, t reflect.Type, required bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		return // null decodes to the zero value
	}
	if s, ok := v.(string); ok && t == reflect.TypeFor[metav1.Duration]() && utf8.RuneCountInString(s) > MaxDurationLength {
		// The CRD's MaxLength (see MaxDurationLength).
		w.invalid = append(w.invalid, field.TooLongCharacters(p, s, MaxDurationLength))
		return
	}
	if s, ok := v.(string); ok && t == reflect.TypeFor[resource.Quantity]() && !quantityRE.MatchString(s) {
		w.invalid = append(w.invalid, fmt.Errorf("%s: invalid quantity %q: must be a number with an optional suffix, such as 500m, 4 or 32Gi", p, s))
		return
	}
	if decodesItself(t) {
		w.leaf(p, v, t)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if m, ok := v.(map[string]any); ok {
			w.object(p, m, t, required)
			return
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				w.value(p.Key(k), m[k], t.Elem(), required)
			}
			return
		}
	case reflect.Slice:
		if l, ok := v.([]any); ok && t.Elem().Kind() != reflect.Uint8 {
			for i, e := range l {
				w.value(p.Index(i), e, t.Elem(), required)
			}
			return
		}
	}
	w.leaf(p, v, t)
}

// object walks a JSON object decoding into the struct type t.
func (w *docWalker) object(p *field.Path, m map[string]any, t reflect.Type, required bool) {
	fields := jsonFields(t)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f, ok := fields[k]
		if !ok {
			// Worded as the strict decoder words it.
			w.unknown = append(w.unknown, fmt.Errorf("unknown field %q", p.Child(k).String()))
			continue
		}
		w.value(p.Child(k), m[k], f.typ, required && !(p == nil && (k == "metadata" || k == "status")))
	}
	if !required {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if fields[name].required && m[name] == nil {
			w.missing = append(w.missing, field.Required(p.Child(name), ""))
		}
	}
}

// leaf decodes one value into a t on its own and records why it fails.
func (w *docWalker) leaf(p *field.Path, v any, t reflect.Type) {
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	err = kjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(t).Interface())
	if err == nil {
		return
	}
	shown := string(raw)
	if len(shown) > 80 {
		shown = shown[:77] + "..."
	}
	w.invalid = append(w.invalid, fmt.Errorf("%s: invalid %s %s: %s", p, valueKind(t), shown, reason(err, t)))
}

// valueKind names what a leaf should hold, for the message.
func valueKind(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[metav1.Duration]():
		return "duration"
	case reflect.TypeFor[resource.Quantity]():
		return "quantity"
	case reflect.TypeFor[metav1.Time](), reflect.TypeFor[metav1.MicroTime]():
		return "time"
	case reflect.TypeFor[intstr.IntOrString]():
		return "integer or string"
	}
	return "value"
}

// reason says why a value does not decode. A type that decodes itself
// says it best; for the others the only failure is a value of the wrong
// JSON type (or out of range), said in JSON's terms: the decoder's own
// message names Go types (Go struct field Phase.spec.phases.gang.min of
// type int32).
func reason(err error, t reflect.Type) string {
	if decodesItself(t) {
		return err.Error()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("must be a %d-bit integer", t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("must be a non-negative %d-bit integer", t.Bits())
	case reflect.Float32, reflect.Float64:
		return "must be a number"
	case reflect.String:
		return "must be a string"
	case reflect.Bool:
		return "must be true or false"
	case reflect.Struct, reflect.Map:
		return "must be an object"
	case reflect.Slice, reflect.Array:
		return "must be a list"
	}
	return err.Error()
}

type jsonField struct {
	typ reflect.Type
	// required: the API server requires the key. controller-gen marks a
	// field required when its tag has neither omitempty nor omitzero
	// (unless it is marked +optional); a pointer, list or map without
	// omitempty is sometimes +optional (probes' grpc.service), so only
	// values are treated as required here. apis/v1alpha1's tests check
	// this rule against every required field of the generated CRD.
	required bool
}

// jsonFields maps the JSON names of t's fields, including those of inlined
// embedded structs (TypeMeta), to their types.
func jsonFields(t reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			maps.Copy(out, jsonFields(ft))
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = jsonField{typ: f.Type, required: requiredField(f.Type, opts)}
	}
	return out
}

func requiredField(t reflect.Type, opts string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == "omitempty" || o == "omitzero" || o == "inline" {
			return false
		}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return false
	}
	return true
}
