package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// defaultTimeout bounds a scenario that sets no Timeout.
const defaultTimeout = 10 * time.Minute

// Runner runs scenarios one after the other, each on its own cluster.
type Runner struct {
	// Root is the module root.
	Root string
	// ManagerBinary is a prebuilt flotilla-manager; empty builds one once.
	ManagerBinary string
	// Log receives progress lines.
	Log io.Writer
	// Meta is stamped on every result.
	Meta Meta

	buildOnce sync.Once
	built     string
	buildErr  error
	buildDir  string
}

// Run runs the scenarios and returns one result each; a failed scenario
// has Error set and the others still run.
func (r *Runner) Run(ctx context.Context, scenarios []Scenario) []Result {
	defer r.cleanBuild()
	var results []Result
	for _, s := range scenarios {
		if ctx.Err() != nil {
			break
		}
		r.logf("=== %s: %s", s.Name, s.Description)
		res := r.runOne(ctx, s)
		r.logf("--- %s done in %.0fs%s", s.Name, res.TotalSeconds, errorSuffix(res.Error))
		results = append(results, res)
	}
	return results
}

func errorSuffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": FAILED: " + msg
}

func (r *Runner) runOne(ctx context.Context, s Scenario) Result {
	res := r.Meta.newResult(s)
	ctx, cancel := context.WithTimeout(ctx, cmp0(s.Timeout, defaultTimeout))
	defer cancel()
	err := r.withEnv(ctx, s, func(env *Env) error { return s.Run(ctx, env, &res) })
	res.TotalSeconds = time.Since(res.StartedAt).Seconds()
	if err != nil {
		res.Error = err.Error()
	}
	res.finish()
	return res
}

func cmp0(d, fallback time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return fallback
}

// withEnv starts what the scenario needs, runs fn and stops everything.
// On failure the manager's files and the cluster's logs are kept.
func (r *Runner) withEnv(ctx context.Context, s Scenario, fn func(*Env) error) (err error) {
	env, err := r.newEnv(s)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.closeEnv(env, err != nil)) }()
	if !s.NoCluster {
		if err := r.startCluster(ctx, env, s.Cluster); err != nil {
			return err
		}
	}
	return fn(env)
}

func (r *Runner) newEnv(s Scenario) (*Env, error) {
	dir, err := os.MkdirTemp("", "flotilla-bench-"+s.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("creating the work directory: %w", err)
	}
	return &Env{
		Root: r.Root, WorkDir: dir, log: r.Log, binary: r.managerBinary,
		scraper: &http.Client{Timeout: 10 * time.Second},
	}, nil
}

func (r *Runner) startCluster(ctx context.Context, env *Env, opts cluster.Options) error {
	opts, err := withAudit(opts, env.WorkDir)
	if err != nil {
		return err
	}
	opts.Log = r.Log
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("starting the cluster: %w", err)
	}
	env.Cluster = c
	env.Config = benchConfig(c.Config())
	env.Kube, err = kubernetes.NewForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	return nil
}

// benchConfig lifts the client-side rate limit (the harness must not be
// what limits a scenario) and speaks protobuf, as controllers do.
func benchConfig(cfg *rest.Config) *rest.Config {
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = "flotilla-bench"
	return cfg
}

// closeEnv stops the manager and the cluster. A failed scenario keeps the
// work directory, with the cluster's process logs copied into it; FLOTILLA_BENCH_KEEP=1 keeps every
// scenario's manager log, FLOTILLA_BENCH_AUDIT=1 (see withAudit) its audit log too.
func (r *Runner) closeEnv(env *Env, failed bool) error {
	if env.Manager != nil {
		env.Manager.Stop()
	}
	var errs []error
	if env.Cluster != nil {
		if failed {
			errs = append(errs, copyDir(filepath.Join(env.Cluster.Dir(), "logs"), filepath.Join(env.WorkDir, "cluster-logs")))
		}
		errs = append(errs, env.Cluster.Stop())
	}
	if failed || os.Getenv("FLOTILLA_BENCH_KEEP") != "" || os.Getenv("FLOTILLA_BENCH_AUDIT") != "" {
		r.logf("kept the scenario's logs in %s", env.WorkDir)
	} else {
		errs = append(errs, os.RemoveAll(env.WorkDir))
	}
	return errors.Join(errs...)
}

// copyDir copies the regular files of one directory level.
func copyDir(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("keeping logs: %w", err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return fmt.Errorf("keeping logs: %w", err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil || e.IsDir() {
			continue
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			return fmt.Errorf("keeping logs: %w", err)
		}
	}
	return nil
}

// managerBinary is the prebuilt binary, or one built on first use.
func (r *Runner) managerBinary(ctx context.Context) (string, error) {
	if r.ManagerBinary != "" {
		return r.ManagerBinary, nil
	}
	r.buildOnce.Do(func() {
		r.buildDir, r.buildErr = os.MkdirTemp("", "flotilla-bench-build-")
		if r.buildErr != nil {
			return
		}
		r.built = filepath.Join(r.buildDir, ManagerName)
		r.logf("building %s", ManagerName)
		r.buildErr = framework.BuildManager(ctx, r.Root, r.built)
	})
	return r.built, r.buildErr
}

func (r *Runner) cleanBuild() {
	if r.buildDir != "" {
		_ = os.RemoveAll(r.buildDir)
	}
}

func (r *Runner) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(r.Log, format+"\n", args...)
}

// ReadJSON reads a results file WriteJSON wrote.
func ReadJSON(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	var results []Result
	if err := json.Unmarshal(data, &results); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	return results, nil
}

// WriteJSON writes the results as an indented JSON array, one object per
// scenario, creating the directory.
func WriteJSON(path string, results []Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the results directory: %w", err)
	}
	if results == nil {
		results = []Result{}
	}
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// commandIn prepares a command run in dir.
func commandIn(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	return cmd
}
