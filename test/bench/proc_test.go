package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

const statusText = `Name:	kube-controller
State:	S (sleeping)
VmPeak:	 1400000 kB
VmHWM:	  204800 kB
VmRSS:	  102400 kB
Threads:	12
`

func TestParseStatusMemory(t *testing.T) {
	rss, hwm, err := parseStatusMemory(statusText)
	if err != nil {
		t.Fatal(err)
	}
	if rss != 100<<20 || hwm != 200<<20 {
		t.Fatalf("rss %d hwm %d", rss, hwm)
	}
	if _, _, err := parseStatusMemory("Name:\tkthreadd\n"); err == nil {
		t.Fatal("want an error without VmRSS")
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and a parenthesis; utime 250, stime 50 ticks.
	stat := "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 1000 500"
	cpu, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if cpu != 3 {
		t.Fatalf("cpu = %v, want 3 seconds", cpu)
	}
	if ppid, err := parseStatPPID(stat); err != nil || ppid != 1 {
		t.Fatalf("ppid = %d, %v", ppid, err)
	}
	for _, bad := range []string{"no parens", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x 50"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q) succeeded", bad)
		}
	}
}

func TestReadProcSelf(t *testing.T) {
	st, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.RSSBytes == 0 || st.HWMBytes < st.RSSBytes {
		t.Fatalf("ReadProc = %+v", st)
	}
}

func TestSamplerCountsCPUOfTheWindowOnly(t *testing.T) {
	self := Proc{Name: "self", PID: os.Getpid()}
	burn(50 * time.Millisecond) // before the window: not counted
	s, err := startSampler([]Proc{self}, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	burn(200 * time.Millisecond)
	usage, err := s.finish()
	if err != nil {
		t.Fatal(err)
	}
	u := usage["self"]
	// Ticks are 10 ms; allow for them and for a busy machine.
	if u.CPUSeconds < 0.05 || u.CPUSeconds > u.WallSeconds+0.05 || u.PeakRSSBytes == 0 || u.PID != self.PID {
		t.Fatalf("usage = %+v", u)
	}
	if u.Cores != u.CPUSeconds/u.WallSeconds {
		t.Fatalf("cores = %v", u.Cores)
	}
}

func TestSamplerReportsAProcessThatExited(t *testing.T) {
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Skip("coreutils sleep is needed to have a short-lived process:", err)
	}
	s, err := startSampler([]Proc{{Name: "sleep", PID: cmd.Process.Pid}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.finish(); err == nil {
		t.Fatal("want an error for a process that is gone")
	}
}

func TestFindChild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "flotilla-fake-child")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("coreutils sleep is needed to copy a real executable")
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid, err := FindChild("flotilla-fake-child")
	if err != nil || pid != cmd.Process.Pid {
		t.Fatalf("FindChild = %d, %v; want %d", pid, err, cmd.Process.Pid)
	}
	if _, err := FindChild("no-such-binary"); err == nil {
		t.Fatal("want an error for a binary no child runs")
	}
}

func burn(d time.Duration) {
	x := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		x++
	}
	_ = x
}
