package v1alpha1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Decode parses a multi-document YAML (or JSON) stream of PhasedTrainings,
// as a user would hand it to kubectl apply. It is strict where the API server
// would be strict or where a silent mistake would cost GPU hours: an unknown
// or duplicated field, a value that does not decode (`startTimeout: 5min`,
// a quantity `abc`, a string for a number) and a required field left out
// (a container without a name) are errors naming the field's path
// (spec.phases[0].startTimeout), and a document of another apiVersion or kind
// is an error naming the document's index (1-based, counting the
// "---"-separated documents of the stream). Documents that hold only comments
// or whitespace are skipped.
//
// Decode does not apply defaults (see SetDefaults) and does not check the
// spec's semantics (see package phases): it reports what was written.
//
// Every document is decoded; the returned error joins the problems of all of
// them, and the returned slice holds the documents that decoded cleanly.
func Decode(data []byte) ([]PhasedTraining, error) {
	objs, err := decodeStream(data, Kind)
	out := make([]PhasedTraining, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o.(*PhasedTraining))
	}
	return out, err
}

// DecodeObjects is Decode for a stream that may also hold TenantQueues, as
// a cluster's setup does: each object is a *PhasedTraining or a
// *TenantQueue, in the order of the stream. A document of any other kind
// is an error naming its index.
func DecodeObjects(data []byte) ([]runtime.Object, error) {
	return decodeStream(data, Kind, QueueKind)
}

// decodeStream decodes the documents of a stream, each of one of kinds.
func decodeStream(data []byte, kinds ...string) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var (
		out  []runtime.Object
		errs []error
	)
	for index := 1; ; index++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// The reader cannot resynchronise after a bad separator, so
			// this is the last document we can look at.
			errs = append(errs, fmt.Errorf("document %d: %w", index, err))
			break
		}
		obj, err := decodeOne(doc, kinds)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", index, err))
			continue
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out, errors.Join(errs...)
}

// newObject returns an empty object of one of the kinds Decode reads.
func newObject(kind string) runtime.Object {
	switch kind {
	case Kind:
		return &PhasedTraining{}
	case QueueKind:
		return &TenantQueue{}
	}
	return nil
}

// decodeOne decodes one document into an object of one of kinds; nil for
// an empty document.
func decodeOne(doc []byte, kinds []string) (runtime.Object, error) {
	// YAMLToJSONStrict rejects duplicate keys, which plain YAML would
	// resolve silently to the last one.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || bytes.Equal(js, []byte("null")) {
		return nil, nil
	}
	// The untyped document, for what the typed decoder cannot say
	// (docProblems).
	var m map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &m); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	// Check the type first, so a Deployment in the stream is reported as
	// the wrong kind rather than as a pile of unknown fields.
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	if tm.APIVersion != GroupVersion.String() || !slices.Contains(kinds, tm.Kind) {
		return nil, fmt.Errorf("apiVersion %q kind %q: want apiVersion %q kind %s",
			tm.APIVersion, tm.Kind, GroupVersion.String(), strings.Join(quoted(kinds), " or "))
	}
	obj := newObject(tm.Kind)
	// sigs.k8s.io/json matches field names case-sensitively, as the API
	// server does, and reports unknown fields with their full path
	// (e.g. `unknown field "spec.phases[0].gang.minn"`).
	errs, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	invalid, unknown, missing := docProblems(m, reflect.TypeOf(obj).Elem())
	if err != nil {
		// The decoder's error names no path for a value that decodes
		// itself (`time: unknown unit "min" in duration "5min"`), and it
		// stops there, before the strict checks; the walk finds them all.
		if len(invalid) == 0 {
			invalid = []error{err}
		}
		errs = unknown
	}
	errs = append(append(errs, invalid...), missing...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return obj, nil
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// SetDefaults applies the defaults the CRD's schema applies on admission
// (successPolicy AllWorkers) and the ones the controller assumes (desired =
// min), so an object read from a file behaves as the same object read back
// from the API server. It is idempotent.
func SetDefaults(pt *PhasedTraining) {
	for i := range pt.Spec.Phases {
		p := &pt.Spec.Phases[i]
		if p.SuccessPolicy == "" {
			p.SuccessPolicy = SuccessPolicyAllWorkers
		}
		if p.Gang.Desired == nil {
			d := p.Gang.Min
			p.Gang.Desired = &d
		}
	}
}
