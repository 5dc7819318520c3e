package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Competition is the CPU other processes took while one package's
// benchmarks ran: the machine's busy time (/proc/stat) less that of the
// benchmark's own process tree (the `go test` command, its test binary and
// every process they start: control planes, managers, Kueue), whose exited
// members are counted through their parents' cutime and cstime. Sampled apart
// from the load average, which counts the benchmark's own processes too.
type Competition struct {
	// Cores is how many of the machine's cores other processes kept busy on
	// average over the run; Max the most over one sampling interval.
	Cores, Max float64
	// Load is the 1-minute load average over the run (all processes).
	Load    LoadStats
	Samples int
	Took    time.Duration
	Every   time.Duration // the sampling interval
}

// competed: other work used a noticeable part of the machine. On 2 cores a
// quarter of a core from others already moves latencies measured here.
func (c Competition) competed() bool { return c.Cores >= 0.25 }

// add merges another package's figures (a section drawn from several).
func (c Competition) add(o Competition) Competition {
	if c.Took+o.Took == 0 {
		return c
	}
	out := Competition{
		Cores:   (c.Cores*c.Took.Seconds() + o.Cores*o.Took.Seconds()) / (c.Took + o.Took).Seconds(),
		Max:     max(c.Max, o.Max),
		Samples: c.Samples + o.Samples,
		Took:    c.Took + o.Took,
		Every:   max(c.Every, o.Every),
	}
	out.Load = LoadStats{Min: min(c.Load.Min, o.Load.Min), Max: max(c.Load.Max, o.Load.Max), Samples: c.Load.Samples + o.Load.Samples}
	if c.Load.Samples == 0 {
		out.Load.Min = o.Load.Min
	}
	if o.Load.Samples == 0 {
		out.Load.Min = c.Load.Min
	}
	if n := out.Load.Samples; n > 0 {
		out.Load.Mean = (c.Load.Mean*float64(c.Load.Samples) + o.Load.Mean*float64(o.Load.Samples)) / float64(n)
	}
	return out
}

// String says it in a sentence of the report.
func (c Competition) String() string {
	if c.Took == 0 {
		return "not sampled"
	}
	return fmt.Sprintf("other processes kept %.2f cores busy on average (at most %.2f over %s), 1-minute load average %.1f–%.1f (mean %.1f) over %s",
		c.Cores, c.Max, c.Every, c.Load.Min, c.Load.Max, c.Load.Mean, c.Took.Round(time.Second))
}

// competitionEvery is the sampling interval.
const competitionEvery = 5 * time.Second

// competitionSampler samples while one package runs.
type competitionSampler struct {
	root  int // pid of the benchmark's `go test`
	self  int
	mu    sync.Mutex
	c     Competition
	loads []float64
	done  chan struct{}
	wg    sync.WaitGroup
}

func startCompetitionSampler(root int, every time.Duration) *competitionSampler {
	s := &competitionSampler{root: root, self: os.Getpid(), done: make(chan struct{}), c: Competition{Every: every}}
	s.wg.Go(func() {
		prev, err := s.sample()
		started := time.Now()
		t := time.NewTicker(every)
		defer t.Stop()
		var busy float64 // other processes' CPU seconds
		for {
			select {
			case <-s.done:
			case <-t.C:
			}
			if v, err := loadAverage(); err == nil {
				s.mu.Lock()
				s.loads = append(s.loads, v)
				s.mu.Unlock()
			}
			cur, cerr := s.sample()
			if err == nil && cerr == nil {
				other := max((cur.total-prev.total)-(cur.ours-prev.ours), 0)
				wall := cur.at.Sub(prev.at).Seconds()
				busy += other
				s.mu.Lock()
				if wall > 0 {
					s.c.Max = max(s.c.Max, other/wall)
				}
				s.c.Samples++
				s.c.Took = cur.at.Sub(started)
				if s.c.Took > 0 {
					s.c.Cores = busy / s.c.Took.Seconds()
				}
				s.mu.Unlock()
			}
			prev, err = cur, cerr
			select {
			case <-s.done:
				return
			default:
			}
		}
	})
	return s
}

func (s *competitionSampler) stop() Competition {
	close(s.done)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.c
	for i, v := range s.loads {
		if i == 0 || v < c.Load.Min {
			c.Load.Min = v
		}
		c.Load.Max = max(c.Load.Max, v)
		c.Load.Mean += v
	}
	if c.Load.Samples = len(s.loads); c.Load.Samples > 0 {
		c.Load.Mean /= float64(c.Load.Samples)
	}
	return c
}

// cpuSample is the machine's busy CPU seconds and the benchmark tree's, at.
type cpuSample struct {
	at          time.Time
	total, ours float64
}

const clockTicks = 100 // USER_HZ

func (s *competitionSampler) sample() (cpuSample, error) {
	at := time.Now()
	total, err := busySeconds()
	if err != nil {
		return cpuSample{}, err
	}
	procs, err := processes()
	if err != nil {
		return cpuSample{}, err
	}
	// The benchmark's tree: the root and every descendant; benchreport itself
	// (and its other children: git) counts as ours too, not as competition.
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var ours float64
	seen := map[int]bool{}
	var walk func(int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		if p, ok := procs[pid]; ok {
			ours += p.cpu
		}
		for _, c := range children[pid] {
			walk(c)
		}
	}
	walk(s.root)
	walk(s.self)
	return cpuSample{at: at, total: total, ours: ours}, nil
}

// busySeconds is every CPU's non-idle time since boot, from /proc/stat.
func busySeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy float64
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		switch i {
		case 3, 4: // idle, iowait
		case 8, 9: // guest, guest_nice: already counted in user, nice
		default:
			busy += n
		}
	}
	return busy / clockTicks, nil
}

type proc struct {
	ppid int
	cpu  float64 // utime+stime+cutime+cstime, seconds
}

// processes reads every process's parent and CPU (its own and its reaped
// children's) from /proc/<pid>/stat.
func processes() (map[int]proc, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	out := make(map[int]proc, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		if p, ok := parseStat(b); ok {
			out[pid] = p
		}
	}
	return out, nil
}

// parseStat reads ppid (field 4) and utime, stime, cutime, cstime (14–17) of
// a /proc/<pid>/stat line; the command (field 2) may hold spaces.
func parseStat(b []byte) (proc, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return proc{}, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b[i+2:]))
	sc.Split(bufio.ScanWords)
	var fields []string
	for sc.Scan() && len(fields) < 15 {
		fields = append(fields, sc.Text())
	}
	if len(fields) < 15 {
		return proc{}, false
	}
	// fields[0] is the state (field 3): ppid is fields[1], utime fields[11].
	ppid, _ := strconv.Atoi(fields[1])
	var ticks float64
	for _, f := range fields[11:15] {
		n, _ := strconv.ParseFloat(f, 64)
		ticks += n
	}
	return proc{ppid: ppid, cpu: ticks / clockTicks}, true
}
