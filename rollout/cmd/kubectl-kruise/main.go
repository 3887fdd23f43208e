// Command kubectl-kruise is the kubectl plugin for Flotilla's Rollouts and Kruise workloads. It keeps
// upstream kubectl-kruise's command names, flags and API effects, so scripts written for upstream run
// unchanged; `rollout status` adds exit codes a CI job can act on.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, defaultDeps())
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, streams genericiooptions.IOStreams, d deps) int {
	cmd := newRootCommand(streams, d)
	cmd.SetArgs(args)
	return exitCode(cmd.ExecuteContext(ctx), streams.ErrOut)
}

// exitCode prints err the way kubectl does and maps it to the exit code it carries (1 by default).
func exitCode(err error, errOut io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if !errors.As(err, &ce) {
		printErrors(errOut, err)
		return exitError
	}
	if ce.err != nil {
		printErrors(errOut, ce.err)
	}
	return ce.code
}

// printErrors prints one "error:" line per error, also for the several errors of a multi-Rollout command.
// Only a join at the top is split: a join wrapped with context is printed whole, context included.
func printErrors(errOut io.Writer, err error) {
	many, ok := err.(interface{ Unwrap() []error })
	if !ok {
		fmt.Fprintf(errOut, "error: %v\n", err)
		return
	}
	for _, e := range many.Unwrap() {
		printErrors(errOut, e)
	}
}

// codeError ends a command with a given exit code; err, when set, is printed.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

func (e *codeError) Unwrap() error { return e.err }

// withCode returns nil for exitOK, so a command can return withCode(...) directly.
func withCode(code int, err error) error {
	if code == exitOK && err == nil {
		return nil
	}
	return &codeError{code: code, err: err}
}
