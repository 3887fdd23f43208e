// Command images is `make images`: it builds the flotilla-manager and flotilla-nodeagent images from this
// checkout as OCI archives (bin/images/<name>.tar by default), prints their references and digests, and
// with --push sends them to the registry of their references (credentials from the Docker config, as
// `docker login` leaves them).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/images"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	stamp, err := images.DefaultStamp(ctx, root)
	if err != nil {
		return err
	}
	out := flag.String("out", filepath.Join(root, "bin", "images"), "directory of the archives")
	flag.StringVar(&stamp.Registry, "registry", stamp.Registry, "registry and path the image names start with")
	flag.StringVar(&stamp.Version, "version", stamp.Version, "tag and version label (default: the chart's appVersion)")
	flag.StringVar(&stamp.Arch, "arch", stamp.Arch, "target architecture (default: this machine's)")
	push := flag.Bool("push", false, "also push the images to their registry")
	flag.Parse()

	results, err := images.BuildProducts(ctx, root, *out, stamp)
	if err != nil {
		return err
	}
	for _, r := range results {
		fmt.Printf("%s\t%s\t%s\n", r.Ref, r.Digest, r.Archive)
		if *push {
			if err := images.Push(ctx, r); err != nil {
				return err
			}
			fmt.Printf("pushed %s\n", r.Ref)
		}
	}
	return nil
}
