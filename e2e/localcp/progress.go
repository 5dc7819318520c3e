package localcp

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// heartbeat is how often a long build says it is still running.
const heartbeat = time.Minute

// progress prints one line when a build starts and one when it ends (or is found
// cached), numbered N of M, with the elapsed time and what is left: a cold build
// takes ~16 minutes on 2 cores and must not look stuck.
type progress struct {
	log   io.Writer
	total int
	began time.Time

	mu    sync.Mutex
	n     int // number of the current build
	start time.Time
}

func newProgress(log io.Writer, total int) *progress {
	if log == nil {
		log = io.Discard
	}
	return &progress{log: log, total: total, began: time.Now()}
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.log, "binaries: [%d/%d] "+format+"\n", append([]any{p.n, p.total}, args...)...)
}

func (p *progress) next() {
	p.mu.Lock()
	p.n++
	p.start = time.Now()
	p.mu.Unlock()
}

func (p *progress) cached(tb toolBuild) {
	p.next()
	p.printf("%s %s cached (%s)", tb.name, tb.version, binaryNames(tb))
}

// building prints the start line, then a heartbeat every minute until the
// returned stop is called.
func (p *progress) building(tb toolBuild, dest string) (stop func()) {
	p.next()
	p.printf("building %s %s (%s) into %s — first run only; %v elapsed, %d after this",
		tb.name, tb.version, binaryNames(tb), dest, p.elapsed(), p.total-p.n)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.printf("still building %s (%v so far)", tb.name, time.Since(p.start).Round(time.Second))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (p *progress) built(tb toolBuild, rss string) {
	p.printf("built %s %s in %v%s; %v elapsed, %d left",
		tb.name, tb.version, time.Since(p.start).Round(time.Second), rss, p.elapsed(), p.total-p.n)
}

func (p *progress) elapsed() time.Duration { return time.Since(p.began).Round(time.Second) }

func binaryNames(tb toolBuild) string {
	var names []string
	for _, pkg := range tb.packages {
		names = append(names, exeName(pkg))
	}
	return strings.Join(names, ", ")
}
