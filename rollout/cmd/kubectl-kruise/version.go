package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = ""

// buildInfo says what binary this is.
type buildInfo struct {
	Version, Commit, GoVersion, Platform string
}

// versionInfo takes the version from the linker flag, else from the module the binary was built from.
func versionInfo() buildInfo {
	info := buildInfo{Version: version, Commit: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if info.Version == "" && ok {
		info.Version = bi.Main.Version
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if !ok {
		return info
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			info.Commit = s.Value
		}
	}
	return info
}

func newVersionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the client version information",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			i := versionInfo()
			_, err := fmt.Fprintf(a.streams.Out, "kubectl-kruise (Flotilla) %s\nCommit: %s\nGo: %s %s\n", i.Version, i.Commit, i.GoVersion, i.Platform)
			return err
		},
	}
}
