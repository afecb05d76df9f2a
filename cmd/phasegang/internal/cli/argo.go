package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/phasegang/phasegang/apis/v1alpha1"
	"github.com/phasegang/phasegang/cmd/phasegang/argo"
	"github.com/phasegang/phasegang/phases"
)

func newArgo() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "argo",
		Short: "Run PhasedTrainings from Argo Workflows",
	}
	cmd.AddCommand(newArgoTemplate())
	return cmd
}

type argoTemplateFlags struct {
	file, output, name, namespace, serviceAccount string
}

func newArgoTemplate() *cobra.Command {
	var f argoTemplateFlags
	cmd := &cobra.Command{
		Use:   "template -f FILE",
		Short: "Print an Argo WorkflowTemplate that runs a PhasedTraining",
		Long: `template reads the PhasedTrainings of FILE ("-" reads standard input),
checks each as "phasegang validate" does, and prints for each an Argo
WorkflowTemplate whose "phasedtraining" resource template creates it (owned
by the Workflow, with a generated name), waits until status.state is
Succeeded (the step succeeds) or Failed, Infeasible or Invalid (the step
fails), and outputs its name, state and every declared phase output as
"<phase>-<key>". The workflow parameter "traceparent" becomes the
PhasedTraining's phasegang.dev/traceparent annotation. See docs/argo.md.

An invalid PhasedTraining is refused: nothing is printed, and each problem
is reported as "FILE: namespace/name: field.path: problem".`,
		Example: `  phasegang argo template -f examples/train-validate-test.yaml > wft.yaml
  kubectl apply -f wft.yaml
  argo submit -n ml --from workflowtemplate/resnet50 -p traceparent="$TRACEPARENT"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runArgoTemplate(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", `PhasedTraining YAML file ("-" for standard input)`)
	fl.StringVarP(&f.output, "output", "o", "yaml", "output: yaml or json")
	fl.StringVar(&f.name, "name", "", "WorkflowTemplate name (default: the PhasedTraining's name; one PhasedTraining only)")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "WorkflowTemplate namespace (default: the PhasedTraining's)")
	fl.StringVar(&f.serviceAccount, "service-account", "", "service account of the Workflow's pods; it needs the Role of examples/argo/rbac.yaml (create, get, list, watch, delete on phasedtrainings; create, patch on workflowtaskresults)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runArgoTemplate(stdin io.Reader, stdout, stderr io.Writer, f argoTemplateFlags) error {
	if f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", f.output)
	}
	var (
		data []byte
		err  error
	)
	if f.file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(f.file)
	}
	if err != nil {
		return err
	}
	pts, err := v1alpha1.Decode(data)
	if err != nil {
		for _, e := range unjoin(err) {
			fmt.Fprintf(stderr, "%s: %s\n", f.file, oneLine(e.Error()))
		}
		return errReported
	}
	if len(pts) == 0 {
		return fmt.Errorf("%s: no PhasedTraining found", f.file)
	}
	if f.name != "" && len(pts) > 1 {
		return fmt.Errorf("%s: --name with %d PhasedTrainings: it names one WorkflowTemplate", f.file, len(pts))
	}
	bad := false
	for i := range pts {
		// Check the object as the API server will store it (with the CRD's
		// defaults) but embed it as written: the server applies the same
		// defaults when Argo creates it.
		checked := pts[i].DeepCopy()
		v1alpha1.SetDefaults(checked)
		for _, e := range phases.Validate(checked) {
			fmt.Fprintf(stderr, "%s: %s: %s\n", f.file, objectName(checked), oneLine(e.Error()))
			bad = true
		}
	}
	if bad {
		return errReported
	}
	var docs [][]byte
	for i := range pts {
		wft, err := argo.WorkflowTemplate(&pts[i], argo.Options{
			Name:               f.name,
			Namespace:          f.namespace,
			ServiceAccountName: f.serviceAccount,
		})
		if err != nil {
			return fmt.Errorf("%s: %s: %w", f.file, objectName(&pts[i]), err)
		}
		b, err := argo.Marshal(wft, f.output)
		if err != nil {
			return err
		}
		docs = append(docs, b)
	}
	for i, b := range docs {
		if i > 0 && f.output == "yaml" {
			fmt.Fprintln(stdout, "---")
		}
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	}
	return nil
}
