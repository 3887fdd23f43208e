package bench

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Meta is stamped on every result: what code ran where.
type Meta struct {
	GoVersion string
	Commit    string
	Dirty     bool
	Machine   Machine
}

// Machine describes the host.
type Machine struct {
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpuModel,omitempty"`
	MemoryBytes uint64 `json:"memoryBytes,omitempty"`
	Kernel      string `json:"kernel,omitempty"`
}

// CollectMeta reads the Go version, the commit of the module at root
// ("unknown" outside a git checkout) and the machine.
func CollectMeta(ctx context.Context, root string) Meta {
	m := Meta{GoVersion: runtime.Version(), Commit: "unknown", Machine: collectMachine()}
	if out, err := gitOutput(ctx, root, "rev-parse", "HEAD"); err == nil {
		m.Commit = out
	}
	if out, err := gitOutput(ctx, root, "status", "--porcelain", "--untracked-files=no"); err == nil {
		m.Dirty = out != ""
	}
	return m
}

func gitOutput(ctx context.Context, root string, args ...string) (string, error) {
	out, err := commandIn(ctx, root, "git", args...).Output()
	return strings.TrimSpace(string(out)), err
}

func (m Meta) newResult(s Scenario) Result {
	return Result{
		Scenario: s.Name, Description: s.Description,
		GoVersion: m.GoVersion, Commit: m.Commit, Dirty: m.Dirty, Machine: m.Machine,
		Cluster: clusterSize(s), StartedAt: time.Now().UTC().Truncate(time.Second),
	}
}

func collectMachine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	m.CPUModel = cpuModel()
	var info syscall.Sysinfo_t
	if syscall.Sysinfo(&info) == nil {
		m.MemoryBytes = info.Totalram * uint64(info.Unit)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		key, value, ok := strings.Cut(scanner.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}
