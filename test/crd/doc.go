// Package crd tests the generated PhasedTraining CRD the way a real API
// server uses it, without running one: the CRD must pass the API server's own
// CRD validation (including the static CEL cost estimate), and objects are
// pruned, defaulted and validated by the same apiextensions-apiserver code
// (OpenAPI schema, list-map keys, x-kubernetes-validations) that admits them
// in a cluster. The tests also check that package phases rejects what the CRD
// rejects, so admission and the controller agree on what is valid.
//
// The package has no non-test code; it exists so that the heavy
// apiextensions-apiserver dependency stays out of the API package's tests.
package crd
