package argo

import (
	"encoding/json"
	"errors"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/tidwall/gjson"
	"k8s.io/apimachinery/pkg/labels"
)

// EvaluateConditions evaluates tmpl.Resource's successCondition and
// failureCondition against obj (the object as the API server returns it,
// e.g. an unstructured.Unstructured's Object) exactly as Argo's executor does
// on each poll, and reports which one holds:
//
//   - succeeded: Argo ends the step Succeeded;
//   - failed: Argo ends the step Failed;
//   - neither: Argo polls again.
//
// It is a faithful copy of argo-workflows v3.7.18
// workflow/executor/resource.go: WaitResource parses each condition with
// k8s.io/apimachinery labels.Parse and takes its Requirements;
// matchConditions evaluates them against gjsonLabels, a labels.Labels whose
// Has(key) is gjson.GetBytes(json, key).Exists() and Get(key) is
// gjson.GetBytes(json, key).String() — so each key is a gjson path into the
// object's JSON (dots descend, a number indexes an array). Failure
// requirements are checked first and ANY one matching fails the step; then
// success needs ALL success requirements to match. With neither condition
// set WaitResource returns at once (succeeded).
//
// An error means Argo would fail the step without polling: a condition that
// does not parse, or an object that is not valid JSON.
func EvaluateConditions(tmpl *wfv1.Template, obj map[string]any) (succeeded, failed bool, err error) {
	if tmpl == nil || tmpl.Resource == nil {
		return false, false, errors.New("not a resource template")
	}
	res := tmpl.Resource
	if res.SuccessCondition == "" && res.FailureCondition == "" {
		return true, false, nil
	}
	var successReqs, failReqs labels.Requirements
	if res.SuccessCondition != "" {
		sel, err := labels.Parse(res.SuccessCondition)
		if err != nil {
			return false, false, fmt.Errorf("success condition '%s' failed to parse: %w", res.SuccessCondition, err)
		}
		successReqs, _ = sel.Requirements()
	}
	if res.FailureCondition != "" {
		sel, err := labels.Parse(res.FailureCondition)
		if err != nil {
			return false, false, fmt.Errorf("fail condition '%s' failed to parse: %w", res.FailureCondition, err)
		}
		failReqs, _ = sel.Requirements()
	}
	js, err := json.Marshal(obj)
	if err != nil {
		return false, false, err
	}
	if !gjson.ValidBytes(js) {
		return false, false, errors.New("invalid JSON")
	}
	ls := gjsonLabels{json: js}
	for _, req := range failReqs {
		if req.Matches(ls) {
			return false, true, nil
		}
	}
	matched := 0
	for _, req := range successReqs {
		if req.Matches(ls) {
			matched++
		}
	}
	return matched >= len(successReqs), false, nil
}

// gjsonLabels is Argo's adapter (workflow/executor/resource.go) from an
// object's JSON to labels.Labels.
type gjsonLabels struct{ json []byte }

func (g gjsonLabels) Has(label string) bool   { return gjson.GetBytes(g.json, label).Exists() }
func (g gjsonLabels) Get(label string) string { return gjson.GetBytes(g.json, label).String() }

// Lookup is required by labels.Labels in k8s.io/apimachinery >= v0.34 (Argo
// v3.7.18 builds against v0.33, where Requirement.Matches calls Has then
// Get); it returns what those two calls would.
func (g gjsonLabels) Lookup(label string) (string, bool) {
	r := gjson.GetBytes(g.json, label)
	return r.String(), r.Exists()
}
