// Package v1alpha1 holds the phasegang.dev/v1alpha1 API: the PhasedTraining
// kind, its spec (a DAG of gang-scheduled phases) and its status (conditions,
// per-phase state, reservations and outputs); and the cluster-scoped
// TenantQueue kind, a team's quota that PhasedTrainings are admitted
// against (spec.queueName).
//
// The CRD YAML in config/crd is generated from these types by controller-gen;
// every field is marked +optional or +required and documented, because the
// comments become `kubectl explain`. The CRD's OpenAPI and CEL rules check
// what they can cheaply (bounds, names, references between phases); package
// phases checks everything, including what CEL cannot (cycles, expressions).
//
// Decode and SetDefaults read PhasedTrainings from files the way the API
// server would admit them, for the CLI and tests.
//
// +kubebuilder:object:generate=true
// +groupName=phasegang.dev
package v1alpha1
