package trial

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	kindlog "sigs.k8s.io/kind/pkg/log"
)

// progress prints timestamped lines: "[ 12.3s] message".
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newProgress(w io.Writer) *progress { return &progress{w: w, start: time.Now()} }

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	fmt.Fprintf(p.w, "[%6.1fs] %s\n", time.Since(p.start).Seconds(), msg)
}

// kindLogger hands kind's user-facing messages (V(0), warnings, errors) to the
// trial's progress; kind's debug levels are dropped.
type kindLogger struct{ p *progress }

var _ kindlog.Logger = kindLogger{}

func (l kindLogger) Warn(message string)               { l.p.printf("kind: warning: %s", message) }
func (l kindLogger) Warnf(format string, args ...any)  { l.Warn(fmt.Sprintf(format, args...)) }
func (l kindLogger) Error(message string)              { l.p.printf("kind: error: %s", message) }
func (l kindLogger) Errorf(format string, args ...any) { l.Error(fmt.Sprintf(format, args...)) }
func (l kindLogger) V(level kindlog.Level) kindlog.InfoLogger {
	return kindInfo{p: l.p, on: level <= 0}
}

type kindInfo struct {
	p  *progress
	on bool
}

func (i kindInfo) Info(message string) {
	if i.on && strings.TrimSpace(message) != "" {
		i.p.printf("kind: %s", strings.TrimSpace(message))
	}
}
func (i kindInfo) Infof(format string, args ...any) { i.Info(fmt.Sprintf(format, args...)) }
func (i kindInfo) Enabled() bool                    { return i.on }
