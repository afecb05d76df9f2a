package crd_test

import (
	"context"
	"encoding/json"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// crdPath and queueCRDPath are the generated CRDs; `make manifests`
// writes them.
var (
	crdPath      = filepath.Join("..", "..", "config", "crd", "bases", "phasegang.dev_phasedtrainings.yaml")
	queueCRDPath = filepath.Join("..", "..", "config", "crd", "bases", "phasegang.dev_tenantqueues.yaml")
)

// crdPaths are every CRD the project ships.
var crdPaths = []string{crdPath, queueCRDPath}

// apiServer is the part of an API server that admits one kind (a
// PhasedTraining, a TenantQueue): the CRD's structural schema, its OpenAPI validator and its compiled CEL rules.
type apiServer struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// loadCRD reads the generated CRD and converts it to the internal types the
// API server validates.
func loadCRD(t testing.TB, path string) *apiextensions.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read CRD (run `make manifests`): %v", err)
	}
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &v1); err != nil {
		t.Fatalf("decode CRD: %v", err)
	}
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &internal, nil); err != nil {
		t.Fatalf("convert CRD: %v", err)
	}
	return &internal
}

// newAPIServer builds the admission pieces for the PhasedTraining CRD's
// v1alpha1 version the way the apiextensions-apiserver does when the CRD
// is established.
func newAPIServer(t testing.TB) *apiServer { return newAPIServerFor(t, crdPath) }

// newAPIServerFor is newAPIServer for the CRD at path.
func newAPIServerFor(t testing.TB, path string) *apiServer {
	t.Helper()
	crd := loadCRD(t, path)
	var props *apiextensions.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == v1alpha1.GroupVersion.Version && v.Schema != nil {
			props = v.Schema.OpenAPIV3Schema
		}
	}
	if props == nil && crd.Spec.Validation != nil {
		props = crd.Spec.Validation.OpenAPIV3Schema
	}
	if props == nil {
		t.Fatalf("CRD has no schema for %s", v1alpha1.GroupVersion.Version)
	}
	structural, err := structuralschema.NewStructural(props)
	if err != nil {
		t.Fatalf("structural schema: %v", err)
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		t.Fatalf("schema validator: %v", err)
	}
	return &apiServer{
		structural: structural,
		schema:     sv,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}
}

// create admits obj as a create request would (customResourceStrategy.Validate
// after decoding): prune unknown fields and the nulls of non-nullable fields
// (what a Go client sends for a nil list without omitempty), apply schema
// defaults, validate the OpenAPI schema, embedded object metadata and
// list-map/set invariants, and then, unless an earlier error blocks them,
// the CEL rules.
func (s *apiServer) create(obj map[string]any) field.ErrorList { return s.admit(obj, nil) }

// update admits obj as an update of old would: as create, with the CEL
// transition rules (those that read oldSelf) checked against old.
func (s *apiServer) update(obj, old map[string]any) field.ErrorList { return s.admit(obj, old) }

// stored creates obj and returns it as the API server would store it
// (pruned and defaulted): an update's old object, which transition rules
// compare with the new one as the API server does.
func (s *apiServer) stored(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	if errs := s.create(obj); len(errs) > 0 {
		t.Fatalf("the old object is invalid: %v", errs.ToAggregate())
	}
	return obj
}

func (s *apiServer) admit(obj, old map[string]any) field.ErrorList {
	pruning.Prune(obj, s.structural, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s.structural)
	structuraldefaulting.Default(obj, s.structural)

	var errs field.ErrorList
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, s.schema)...)
	errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, obj, s.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			// The API server skips CEL when these are present.
			return errs
		}
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// toUnstructured turns a typed object into the JSON map an API server sees.
func toUnstructured(t testing.TB, obj any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	// The API server decodes integers as int64, not float64; CEL and the
	// schema validator depend on it.
	var out map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	// metav1.Time marshals its zero value as null; a client never sends it.
	if md, ok := out["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return out
}

func TestCRDIsAcceptedByAPIServer(t *testing.T) {
	for _, path := range crdPaths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			crd := loadCRD(t, path)
			// The API server's PrepareForCreate records the storage
			// version before validating; a CRD file never carries status.
			for _, v := range crd.Spec.Versions {
				if v.Storage {
					crd.Status.StoredVersions = []string{v.Name}
				}
			}
			// ValidateCustomResourceDefinition is what the API server runs
			// on create; it compiles every x-kubernetes-validations rule
			// and rejects the CRD when a rule's, or the schema's total,
			// estimated CEL cost exceeds the static limits.
			if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), crd); len(errs) > 0 {
				for _, e := range errs {
					t.Errorf("CRD rejected: %v", e)
				}
			}
		})
	}
}

// TestCELCost reports each rule's estimated worst-case cost, multiplied by
// how many times it can run per object (the product of the maxItems of the
// lists above it), and checks them against the API server's static limits
// with headroom, so that adding a field or raising a maxItems that would make
// a real API server refuse the CRD fails here first, naming the rule.
func TestCELCost(t *testing.T) {
	for _, path := range crdPaths {
		t.Run(filepath.Base(path), func(t *testing.T) { testCELCost(t, newAPIServerFor(t, path)) })
	}
}

func testCELCost(t *testing.T, s *apiServer) {
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	var total uint64
	var walk func(path string, node *structuralschema.Structural, cardinality uint64, root bool)
	walk = func(path string, node *structuralschema.Structural, cardinality uint64, root bool) {
		if node == nil {
			return
		}
		if len(node.XValidations) > 0 {
			results, err := cel.Compile(node, model.SchemaDeclType(node, root), celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
			if err != nil {
				t.Fatalf("%s: compile: %v", path, err)
			}
			for i, r := range results {
				rule := node.XValidations[i]
				if r.Error != nil {
					t.Errorf("%s: rule %q: %v", path, rule.Rule, r.Error)
					continue
				}
				if r.MessageExpressionError != nil {
					t.Errorf("%s: messageExpression %q: %v", path, rule.MessageExpression, r.MessageExpressionError)
					continue
				}
				cost := satMul(satAdd(r.MaxCost, r.MessageExpressionMaxCost), cardinality)
				total = satAdd(total, cost)
				t.Logf("%-28s cost %8d + message %8d x %5d = %10d  %s", path, r.MaxCost, r.MessageExpressionMaxCost, cardinality, cost, rule.Rule)
				// A tenth of the per-expression limit: cheap enough that
				// a thousand objects a second do not load the API server.
				// The API server limits a messageExpression (evaluated
				// only when the rule fails) the same way.
				limit := uint64(crdvalidation.StaticEstimatedCostLimit / 10)
				if r.MaxCost > limit {
					t.Errorf("%s: rule %q: estimated cost %d > %d", path, rule.Rule, r.MaxCost, limit)
				}
				if r.MessageExpressionMaxCost > limit {
					t.Errorf("%s: messageExpression %q: estimated cost %d > %d", path, rule.MessageExpression, r.MessageExpressionMaxCost, limit)
				}
			}
		}
		for name, child := range node.Properties {
			walk(path+"."+name, &child, cardinality, false)
		}
		if node.Items != nil {
			n := uint64(1 << 20) // unbounded: what the estimator assumes is huge
			if node.ValueValidation != nil && node.ValueValidation.MaxItems != nil {
				n = uint64(*node.ValueValidation.MaxItems)
			}
			walk(path+"[]", node.Items, satMul(cardinality, n), false)
		}
		if node.AdditionalProperties != nil && node.AdditionalProperties.Structural != nil {
			walk(path+"{}", node.AdditionalProperties.Structural, cardinality, false)
		}
	}
	walk("", s.structural, 1, true)
	t.Logf("total estimated cost %d (CRD limit %d)", total, crdvalidation.StaticEstimatedCRDCostLimit)
	if limit := uint64(crdvalidation.StaticEstimatedCRDCostLimit / 10); total > limit {
		t.Errorf("total estimated CEL cost %d > %d", total, limit)
	}
}

// satAdd and satMul saturate at the largest uint64: an unbounded estimate
// (math.MaxUint64) must not wrap around into a small total.
func satAdd(a, b uint64) uint64 {
	if s, carry := bits.Add64(a, b, 0); carry == 0 {
		return s
	}
	return math.MaxUint64
}

func satMul(a, b uint64) uint64 {
	if hi, lo := bits.Mul64(a, b); hi == 0 {
		return lo
	}
	return math.MaxUint64
}
