package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/phases"
)

func newValidate() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check PhasedTraining and TenantQueue YAML files",
		Long: `validate decodes each FILE (multi-document YAML; "-" reads standard input)
strictly, applies the API's defaults and checks every PhasedTraining the way
the controller does: phase names and references, dependency cycles, gang
sizes, the iterate loop, and every expression (syntax, names, declared
outputs, boolean result). It checks every TenantQueue the way its CRD does:
resource names, no negative quantity, lendingLimit within nominalQuota,
limits only with a cohort, a positive weight, the preemption policies.

It prints one line per object, "FILE: namespace/name: OK" (a TenantQueue is
cluster-scoped: "FILE: name: OK"), or one line per problem,
"FILE: namespace/name: field.path: problem". It exits 1 if any file has a
problem.`,
		Example: "  phasegang validate examples/*.yaml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			ok := true
			for _, f := range files {
				if !validateFile(cmd.InOrStdin(), cmd.OutOrStdout(), f) {
					ok = false
				}
			}
			if !ok {
				return errReported
			}
			return nil
		},
	}
}

// validateFile prints the verdict for every object of one file and reports
// whether all of them are valid.
func validateFile(stdin io.Reader, out io.Writer, file string) bool {
	var (
		data []byte
		err  error
	)
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(out, "%s: %v\n", file, err)
		return false
	}
	objs, err := v1alpha1.DecodeObjects(data)
	ok := true
	// Decode joins one error per bad document; print each on its own line.
	for _, e := range unjoin(err) {
		fmt.Fprintf(out, "%s: %s\n", file, oneLine(e.Error()))
		ok = false
	}
	if len(objs) == 0 && err == nil {
		fmt.Fprintf(out, "%s: no PhasedTraining or TenantQueue found\n", file)
		return false
	}
	for _, obj := range objs {
		var (
			name string
			errs field.ErrorList
		)
		switch o := obj.(type) {
		case *v1alpha1.PhasedTraining:
			// Validate what the controller will see: the object as the
			// API server stores it, with the CRD's defaults applied.
			v1alpha1.SetDefaults(o)
			name, errs = objectName(o), phases.Validate(o)
		case *v1alpha1.TenantQueue:
			name, errs = o.Name, v1alpha1.ValidateTenantQueue(o)
		}
		if len(errs) == 0 {
			fmt.Fprintf(out, "%s: %s: OK\n", file, name)
			continue
		}
		ok = false
		for _, e := range errs {
			fmt.Fprintf(out, "%s: %s: %s\n", file, name, oneLine(e.Error()))
		}
	}
	return ok
}

// objectName is namespace/name, or name when the file leaves the namespace
// to kubectl's context.
func objectName(pt *v1alpha1.PhasedTraining) string {
	if pt.Namespace == "" {
		return pt.Name
	}
	return pt.Namespace + "/" + pt.Name
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// oneLine folds a multi-line message (YAML errors list one problem per
// line) so that every output line starts with its file.
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " ")
}
