package cluster

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// RunTests is the body of a package's TestMain: it starts one cluster,
// calls onStart (may be nil), runs the tests and always stops the cluster,
// also on SIGINT/SIGTERM and when onStart panics. It returns the exit
// code for os.Exit. When tests fail the process logs are kept and their
// directory printed.
//
//	func TestMain(m *testing.M) {
//		os.Exit(cluster.RunTests(m, cluster.Options{}, func(c *cluster.Cluster) { cfg = c.Config() }))
//	}
func RunTests(m *testing.M, opts Options, onStart func(*Cluster)) int {
	c, err := startInterruptible(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "start test cluster: %v\n", err)
		return 1
	}
	release := StopOnSignal(c)
	defer release()
	defer stopReporting(c)
	if onStart != nil {
		onStart(c)
	}
	code := m.Run()
	if code != 0 {
		keepLogs(c)
	}
	return code
}

// startInterruptible starts a cluster that SIGINT/SIGTERM abort.
func startInterruptible(opts Options) (*Cluster, error) {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return Start(ctx, opts)
}

func stopReporting(c *Cluster) {
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop test cluster: %v\n", err)
	}
}

func keepLogs(c *Cluster) {
	dir, err := c.saveLogs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "keep test cluster logs: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "test cluster logs kept in %s\n", dir)
}

// StopOnSignal stops c and exits the process (status 128+signal) on
// SIGINT or SIGTERM. The returned function removes the handler.
func StopOnSignal(c *Cluster) (release func()) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			fmt.Fprintf(os.Stderr, "%v: stopping the cluster\n", sig)
			stopReporting(c)
			os.Exit(128 + signalNumber(sig))
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(signals)
			close(done)
		})
	}
}

func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 1
}
