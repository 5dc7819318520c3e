package gpucheck

import (
	"fmt"
	"strings"
	"time"
)

// Status says how a row came out.
type Status string

const (
	// OK: gpuvc and the reference agree.
	OK Status = "ok"
	// Differs: they disagree; the check fails.
	Differs Status = "DIFFERS"
	// NotRead: the value could not be read here; said, not failed.
	NotRead Status = "not read"
	// Info: a figure with nothing to compare it to.
	Info Status = "info"
)

// Row is one compared value.
type Row struct {
	GPU       string `json:"gpu,omitempty"` // "GPU 0"; empty for the node
	Field     string `json:"field"`
	Gpuvc     string `json:"gpuvc"`
	Reference string `json:"reference"`
	Status    Status `json:"status"`
	Note      string `json:"note,omitempty"`
}

// Step is one part of the check.
type Step struct {
	Name string `json:"name"`
	// Reference names what gpuvc's values are compared with.
	Reference string        `json:"reference"`
	Took      time.Duration `json:"took"`
	Rows      []Row         `json:"rows"`
	Notes     []string      `json:"notes,omitempty"`
	// Err is why the step could not run at all; it fails the check.
	Err string `json:"error,omitempty"`
}

func (s *Step) add(gpu, field, gpuvc, ref string, st Status, note string) {
	s.Rows = append(s.Rows, Row{GPU: gpu, Field: field, Gpuvc: gpuvc, Reference: ref, Status: st, Note: note})
}

// compare adds a row that is OK when the values are equal.
func (s *Step) compare(gpu, field, gpuvc, ref string) {
	st := OK
	if gpuvc != ref {
		st = Differs
	}
	s.add(gpu, field, gpuvc, ref, st, "")
}

func (s *Step) note(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

// Report is the whole check.
type Report struct {
	Started time.Time     `json:"started"`
	Took    time.Duration `json:"took"`
	Machine string        `json:"machine"`
	Steps   []Step        `json:"steps"`
}

// Failures counts differing rows and steps that could not run.
func (r Report) Failures() int {
	n := 0
	for _, s := range r.Steps {
		if s.Err != "" {
			n++
		}
		for _, row := range s.Rows {
			if row.Status == Differs {
				n++
			}
		}
	}
	return n
}

// Summary is the report's last line.
func (r Report) Summary() string {
	verdict := "PASS"
	if n := r.Failures(); n > 0 {
		verdict = fmt.Sprintf("FAIL (%d difference(s) or failed step(s))", n)
	}
	return fmt.Sprintf("gpu-check: %s: %d steps in %s", verdict, len(r.Steps), r.Took.Round(time.Millisecond))
}

// Markdown renders the report for a file and a terminal alike.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# gpu-check on %s\n\n", r.Machine)
	fmt.Fprintf(&b, "Started %s, took %s.\n", r.Started.UTC().Format(time.RFC3339), r.Took.Round(time.Millisecond))
	for i, s := range r.Steps {
		fmt.Fprintf(&b, "\n## %d. %s (%s)\n\n", i+1, s.Name, s.Took.Round(time.Millisecond))
		fmt.Fprintf(&b, "Compared with: %s.\n\n", s.Reference)
		if s.Err != "" {
			fmt.Fprintf(&b, "**FAILED: %s**\n\n", s.Err)
		}
		if len(s.Rows) > 0 {
			b.WriteString("| GPU | field | gpuvc | reference | status | note |\n|---|---|---|---|---|---|\n")
			for _, row := range s.Rows {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(row.GPU), cell(row.Field), cell(row.Gpuvc), cell(row.Reference), row.Status, cell(row.Note))
			}
		}
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "\n- %s", n)
		}
		if len(s.Notes) > 0 {
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "\n%s\n", r.Summary())
	return b.String()
}

// cell keeps a value inside its Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
