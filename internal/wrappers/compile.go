package wrappers

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/phasegang/phasegang/apis/v1alpha1"
)

// Compiled is what compile makes of pt, failing the test on any error:
//
//	pl := wrappers.Compiled(t, driver.Compile, pt) // defaults first, as the controller does
//	pl := wrappers.Compiled(t, Compile, pt)        // in package phases: the spec as given
//
// compile is passed in because wrappers cannot import phases or driver:
// their own (internal) tests import wrappers, and Go refuses the cycle.
func Compiled[P any](tb testing.TB, compile func(*v1alpha1.PhasedTraining) (P, field.ErrorList), pt *v1alpha1.PhasedTraining) P {
	tb.Helper()
	p, errs := compile(pt)
	if len(errs) > 0 {
		tb.Fatalf("%s/%s does not compile: %v", pt.Namespace, pt.Name, errs.ToAggregate())
	}
	return p
}
