package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat; Linux fixes it
// at 100 for user space whatever the kernel's own tick rate.
const userHZ = 100

// ProcStat is one reading of a process's memory and CPU.
type ProcStat struct {
	RSSBytes uint64
	// HWMBytes is the peak RSS since the process started or since
	// ResetPeakRSS.
	HWMBytes   uint64
	CPUSeconds float64
}

// ReadProc reads a process's RSS, peak RSS and CPU time (user + system).
func ReadProc(pid int) (ProcStat, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return ProcStat{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return ProcStat{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	rss, hwm, err := parseStatusMemory(string(status))
	if err != nil {
		return ProcStat{}, fmt.Errorf("process %d status: %w", pid, err)
	}
	cpu, err := parseStatCPU(string(stat))
	if err != nil {
		return ProcStat{}, fmt.Errorf("process %d stat: %w", pid, err)
	}
	return ProcStat{RSSBytes: rss, HWMBytes: hwm, CPUSeconds: cpu}, nil
}

// ResetPeakRSS restarts the kernel's peak-RSS record (VmHWM) of a process,
// so that a later reading is the peak of the phase that follows.
func ResetPeakRSS(pid int) error {
	path := filepath.Join("/proc", strconv.Itoa(pid), "clear_refs")
	if err := os.WriteFile(path, []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the peak RSS of process %d: %w", pid, err)
	}
	return nil
}

// parseStatusMemory reads VmRSS and VmHWM (in kB) from /proc/<pid>/status.
func parseStatusMemory(status string) (rss, hwm uint64, err error) {
	var haveRSS, haveHWM bool
	for _, line := range strings.Split(status, "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmRSS" {
			rss, haveRSS = kb*1024, true
		} else {
			hwm, haveHWM = kb*1024, true
		}
	}
	if !haveRSS || !haveHWM {
		return 0, 0, errors.New("no VmRSS or VmHWM (a zombie or kernel thread?)")
	}
	return rss, hwm, nil
}

// parseStatCPU reads utime and stime from /proc/<pid>/stat. The command
// name in parentheses may hold spaces or parentheses, so fields are
// counted from the last ')'.
func parseStatCPU(stat string) (float64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("no command name")
	}
	// After the name: state(3) ppid(4) ... utime(14) stime(15).
	fields := strings.Fields(stat[end+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("%d fields after the command name", len(fields))
	}
	var ticks uint64
	for _, i := range []int{utime, stime} {
		v, err := strconv.ParseUint(fields[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("field %d: %w", i+3, err)
		}
		ticks += v
	}
	return float64(ticks) / userHZ, nil
}

// parseStatPPID reads the parent PID from /proc/<pid>/stat.
func parseStatPPID(stat string) (int, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("no command name")
	}
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 2 {
		return 0, errors.New("no parent PID")
	}
	return strconv.Atoi(fields[1])
}

// FindChild returns the PID of this process's child running the named
// executable (e.g. the kube-controller-manager a cluster started).
func FindChild(executable string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("listing /proc: %w", err)
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && isChildRunning(pid, self, executable) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no child process runs %s", executable)
}

func isChildRunning(pid, parent int, executable string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return false
	}
	ppid, err := parseStatPPID(string(stat))
	if err != nil || ppid != parent {
		return false
	}
	exe, err := os.Readlink(filepath.Join(dir, "exe"))
	return err == nil && filepath.Base(exe) == executable
}
