package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// stopGrace is how long a child gets between SIGTERM and SIGKILL. Nothing a
// child holds survives the cluster, so a short grace only lets logs flush.
const stopGrace = 5 * time.Second

// process is one child of the cluster: its own process group, killed when
// the thread that started it dies, its output in a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed once Wait returned
	err     error         // Wait's result, valid after exited is closed
}

// childAttr puts a child in its own process group (so stopping it reaches
// anything it spawns) and has the kernel kill it if its parent dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// startProcess runs bin with args, appending stdout and stderr to
// <logDir>/<name>.log.
func startProcess(name, bin string, args, env []string, logDir string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	defer logFile.Close() // the child keeps its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = childAttr()
	if err := startLocked(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go p.wait()
	return p, nil
}

// startLocked starts cmd on a locked OS thread: Pdeathsig fires when the
// creating thread exits, and the Go runtime may retire an unlocked thread.
// The thread stays with the runtime afterwards, so it lives as long as
// the process.
func startLocked(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Start()
}

func (p *process) wait() {
	p.err = p.cmd.Wait()
	close(p.exited)
}

// pid is the child's PID, which is also its process group ID.
func (p *process) pid() int { return p.cmd.Process.Pid }

// running reports whether the child has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// exitError describes how the child ended; nil while it runs.
func (p *process) exitError() error {
	if p.running() {
		return nil
	}
	if p.err == nil {
		return fmt.Errorf("%s exited (log: %s)", p.name, p.logPath)
	}
	return fmt.Errorf("%s exited: %w (log: %s)", p.name, p.err, p.logPath)
}

// stop ends the whole process group: SIGTERM, then SIGKILL after the grace
// period, and waits until the child is reaped.
func (p *process) stop() {
	if !p.running() {
		return
	}
	p.signalGroup(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		p.signalGroup(syscall.SIGKILL)
		<-p.exited
	}
	// Whatever the leader left behind in its group goes too.
	p.signalGroup(syscall.SIGKILL)
}

func (p *process) signalGroup(sig syscall.Signal) {
	err := syscall.Kill(-p.pid(), sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = p.cmd.Process.Signal(sig)
	}
}
