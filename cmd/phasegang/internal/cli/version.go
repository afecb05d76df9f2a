package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func newVersion(version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print phasegang's version and the Go version it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "phasegang %s %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
