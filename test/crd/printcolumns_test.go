package crd_test

import (
	"context"
	"os"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/driver"
	"github.com/phasegang/phasegang/engine"
	"github.com/phasegang/phasegang/internal/wrappers"
	"github.com/phasegang/phasegang/phases"
)

// TestReasonColumn reads kubectl get pt -o wide's Reason column as the API
// server prints it (the CRD's printer columns through the
// apiextensions-apiserver's table converter) for statuses the driver
// writes: it shows the first True condition's reason, so each state must
// have exactly the one True condition that says why.
func TestReasonColumn(t *testing.T) {
	now := wrappers.T0.Add(time.Hour)
	reserved := now.Add(-2 * time.Minute)
	starting := func() *v1alpha1.PhasedTraining {
		ps := wrappers.Starting("train", "n1", "n2")
		ps.ReservedTime = wrappers.Time(reserved)
		return wrappers.MakePT("job").Phase("train", 2).StartTimeout(time.Minute).StartBackoffLimit(0).Status(ps).Obj()
	}
	advance := func(pt *v1alpha1.PhasedTraining, at time.Time) *v1alpha1.PhasedTraining {
		pl, errs := driver.Compile(pt)
		if len(errs) > 0 {
			t.Fatalf("compile: %v", errs)
		}
		obs := driver.Observations{{Name: "train"}: {Observation: phases.Observation{Granted: 2}}}
		pt.Status = *driver.Advance(pl, pt, obs, at).Status
		return pt
	}
	tests := map[string]struct {
		pt   func() *v1alpha1.PhasedTraining
		want string
	}{
		"a gang whose pods do not run yet": {
			pt:   func() *v1alpha1.PhasedTraining { return advance(starting(), reserved.Add(30*time.Second)) },
			want: v1alpha1.ReasonGangStarting,
		},
		// It was Starting, then its start failures were spent: the
		// column says how it ended, not that it is starting.
		"failed after its start retries": {
			pt: func() *v1alpha1.PhasedTraining {
				return advance(advance(starting(), reserved.Add(30*time.Second)), now)
			},
			want: v1alpha1.ReasonStartFailed,
		},
		"waiting for a PriorityClass that does not exist": {
			pt: func() *v1alpha1.PhasedTraining {
				pt := wrappers.MakePT("job").PriorityClass("research").Phase("train", 2).Status(wrappers.Queued("train")).Obj()
				d := &driver.Demand{}
				d.Add(pt, driver.Priorities{})
				changes := driver.Changes{}
				driver.ApplyPlan(engine.Plan{}, d, now, changes)
				pt.Status = *changes["ns/job"].Status
				return pt
			},
			want: v1alpha1.ReasonWaitingForPriorityClass,
		},
	}
	conv := reasonConvertor(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pt := tc.pt()
			if got := conv(pt); got != tc.want {
				t.Errorf("Reason = %q, want %q; conditions %+v", got, tc.want, pt.Status.Conditions)
			}
		})
	}
}

// reasonConvertor returns what the API server's table for a PhasedTraining
// shows in the Reason column.
func reasonConvertor(t *testing.T) func(*v1alpha1.PhasedTraining) any {
	t.Helper()
	data, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatalf("read CRD: %v", err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("decode CRD: %v", err)
	}
	var cols []apiextensionsv1.CustomResourceColumnDefinition
	for _, v := range crd.Spec.Versions {
		if v.Name == v1alpha1.GroupVersion.Version {
			cols = v.AdditionalPrinterColumns
		}
	}
	conv, err := tableconvertor.New(cols)
	if err != nil {
		t.Fatalf("table convertor: %v", err)
	}
	return func(pt *v1alpha1.PhasedTraining) any {
		obj := &unstructured.Unstructured{Object: toUnstructured(t, pt)}
		table, err := conv.ConvertToTable(context.Background(), obj, nil)
		if err != nil {
			t.Fatalf("ConvertToTable: %v", err)
		}
		for i, c := range table.ColumnDefinitions {
			if c.Name == "Reason" {
				return table.Rows[0].Cells[i]
			}
		}
		t.Fatal("no Reason column")
		return nil
	}
}
