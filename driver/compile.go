package driver

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

// Compile validates and compiles a pipeline's spec as the API server
// leaves it (defaults applied), on a copy: the caller's object, often a
// cache's, is not changed.
func Compile(pt *v1alpha1.PhasedTraining) (*phases.Pipeline, field.ErrorList) {
	c := pt.DeepCopy()
	v1alpha1.SetDefaults(c)
	return phases.Compile(c)
}
