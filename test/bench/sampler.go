package bench

import (
	"errors"
	"math"
	"sync"
	"time"
)

// Proc names a process whose usage a phase records.
type Proc struct {
	Name string
	PID  int
}

// sampler follows processes through a phase: CPU time from the start and
// end readings, peak RSS from the kernel's high-water mark (reset at the
// start) and, where the reset is not allowed, from periodic readings.
type sampler struct {
	procs  []Proc
	start  map[string]ProcStat
	reset  map[string]bool
	begin  time.Time
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	peak   map[string]uint64
	errors []error
}

func startSampler(procs []Proc, every time.Duration) (*sampler, error) {
	s := &sampler{
		procs: procs, start: map[string]ProcStat{}, reset: map[string]bool{}, peak: map[string]uint64{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	for _, p := range procs {
		s.reset[p.Name] = ResetPeakRSS(p.PID) == nil
		st, err := ReadProc(p.PID)
		if err != nil {
			return nil, err
		}
		s.start[p.Name], s.peak[p.Name] = st, st.RSSBytes
	}
	s.begin = time.Now()
	go s.loop(every)
	return s, nil
}

func (s *sampler) loop(every time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.sample()
		}
	}
}

// sample records the current RSS of every process.
func (s *sampler) sample() map[string]ProcStat {
	out := map[string]ProcStat{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		st, err := ReadProc(p.PID)
		if err != nil {
			s.errors = append(s.errors, err)
			continue
		}
		s.peak[p.Name] = max(s.peak[p.Name], st.RSSBytes)
		out[p.Name] = st
	}
	return out
}

// finish stops sampling and returns each process's usage over the phase;
// a process that could not be read (it exited) is an error.
func (s *sampler) finish() (map[string]Usage, error) {
	close(s.stop)
	<-s.done
	wall := time.Since(s.begin).Seconds()
	end := s.sample()
	if len(s.errors) > 0 {
		return nil, errors.Join(s.errors...)
	}
	out := map[string]Usage{}
	for _, p := range s.procs {
		out[p.Name] = s.usage(p, end[p.Name], wall)
	}
	return out, nil
}

func (s *sampler) usage(p Proc, end ProcStat, wall float64) Usage {
	peak := s.peak[p.Name]
	if s.reset[p.Name] {
		peak = max(peak, end.HWMBytes)
	}
	// Rounded to the tick, so float noise does not pose as precision.
	cpu := math.Round((end.CPUSeconds-s.start[p.Name].CPUSeconds)*userHZ) / userHZ
	u := Usage{PID: p.PID, PeakRSSBytes: peak, CPUSeconds: cpu, WallSeconds: wall}
	if wall > 0 {
		u.Cores = cpu / wall
	}
	return u
}
