package phases

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// validateRetention checks spec.podTTLSecondsAfterFinished as the CRD's
// Minimum does.
func validateRetention(root *field.Path, spec *v1alpha1.PhasedTrainingSpec) field.ErrorList {
	if ttl := spec.PodTTLSecondsAfterFinished; ttl != nil && *ttl < 0 {
		return field.ErrorList{field.Invalid(root.Child("podTTLSecondsAfterFinished"), *ttl, "must be at least 0")}
	}
	return nil
}
