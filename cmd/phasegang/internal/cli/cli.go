package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// errReported means a command has already printed why it failed; Main only
// sets the exit code.
var errReported = errors.New("failed")

// Main runs the phasegang command line and returns the process exit code:
// 0 on success, 1 when a command fails (for validate: when any object is
// invalid).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, version string) int {
	root := newRoot(stdin, stdout, stderr, version)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		if !errors.Is(err, errReported) {
			fmt.Fprintf(stderr, "phasegang: %v\n", err)
		}
		return 1
	}
	return 0
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer, version string) *cobra.Command {
	root := &cobra.Command{
		Use:   "phasegang",
		Short: "Gang-scheduled, multi-phase ML training pipelines on Kubernetes",
		Long: `phasegang runs PhasedTrainings: pipelines of phases (train → validate →
test) where each phase's gang of workers is reserved whole, atomically, and
released when the phase ends, so pipelines never deadlock holding partial
gangs.`,
		// Errors are printed once, by Main; usage only on request.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newSimulate(), newController(), newValidate(), newArgo(), newTrace(), newQueue(), newVersion(version))
	return root
}
