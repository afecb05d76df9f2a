package controllers

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestPermanentRejection(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.Required(field.NewPath("spec"), "")}), true},
		{"denied by a policy", apierrors.NewForbidden(pods, "p", errors.New("ValidatingAdmissionPolicy 'x' denied request")), true},
		{"exceeded quota", apierrors.NewForbidden(pods, "p", errors.New("exceeded quota: q, requested: nvidia.com/gpu=8, used: nvidia.com/gpu=8, limited: nvidia.com/gpu=8")), false},
		{"quota requires a limit", apierrors.NewForbidden(pods, "p", errors.New("failed quota: mem: must specify limits.memory for: worker")), true},
		{"timeout", apierrors.NewTimeoutError("slow", 1), false},
		{"unavailable", apierrors.NewServiceUnavailable("down"), false},
		{"connection refused", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), false},
	} {
		if got := PermanentRejection(c.err); got != c.want {
			t.Errorf("%s: PermanentRejection = %v, want %v", c.name, got, c.want)
		}
	}
}

// A failed worker create is a refusal (the gang is released) when the API
// server refused the pod, for good or for now; a request that failed on
// its way is retried as is.
func TestRefusalOf(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, c := range []struct {
		name             string
		err              error
		refused, forGood bool
	}{
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.Required(field.NewPath("spec"), "")}), true, true},
		{"denied by a policy", apierrors.NewForbidden(pods, "p", errors.New("ValidatingAdmissionPolicy 'x' denied request")), true, true},
		{"exceeded quota", apierrors.NewForbidden(pods, "p", errors.New("exceeded quota: q, requested: nvidia.com/gpu=8")), true, false},
		{"timeout", apierrors.NewTimeoutError("slow", 1), false, false},
		{"unavailable", apierrors.NewServiceUnavailable("down"), false, false},
		{"connection refused", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), false, false},
	} {
		rf := refusalOf(c.err)
		if (rf != nil) != c.refused || rf != nil && rf.forGood != c.forGood {
			t.Errorf("%s: refusalOf = %+v, want refused %v, for good %v", c.name, rf, c.refused, c.forGood)
		}
	}
}
