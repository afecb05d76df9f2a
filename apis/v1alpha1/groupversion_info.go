package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of this package.
var GroupVersion = schema.GroupVersion{Group: "phasegang.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this package's kinds.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kind is the kind of a PhasedTraining.
const Kind = "PhasedTraining"

// QueueKind is the kind of a TenantQueue.
const QueueKind = "TenantQueue"

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &PhasedTraining{}, &PhasedTrainingList{}, &TenantQueue{}, &TenantQueueList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
