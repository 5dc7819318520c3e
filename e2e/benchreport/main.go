package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts runOptions
	out := flag.String("out", "docs/benchmarks.md", "the report to write: only the part between the scale's markers (bench, bench-full) is replaced; empty: print only")
	flag.StringVar(&opts.scale, "scale", "small", "BENCH_SCALE for the benchmarks: small (fits ~20 minutes on 2 cores), full (100 teams, 10,000 pods) or large (200 teams, 20,000 pods: how the manager's memory grows)")
	flag.StringVar(&opts.bench, "bench", ".", "go test -bench regexp")
	flag.StringVar(&opts.benchtime, "benchtime", "", "go test -benchtime (empty: go test's default)")
	flag.StringVar(&opts.timeout, "timeout", "60m", "go test -timeout per package")
	flag.Parse()
	if opts.scale != "small" && opts.scale != "full" && opts.scale != "large" {
		return fmt.Errorf("-scale %q: want small, full or large", opts.scale)
	}
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	root, err := gitOutput("rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	pkgs, err := benchmarkPackages(root, patterns...)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchreport: %d packages with benchmarks: %s\n", len(pkgs), strings.Join(pkgs, " "))
	commit, _ := gitOutput("describe", "--always", "--dirty")
	r := runPackages(context.Background(), root, pkgs, opts, os.Stdout)
	generated := Render(r, describeMachine(commit))
	if *out == "" {
		fmt.Print(generated)
		return nil
	}
	old, err := os.ReadFile(*out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc, err := Splice(string(old), sectionName(opts.scale), generated)
	if err != nil {
		return fmt.Errorf("%s: %w", *out, err)
	}
	if err := os.WriteFile(*out, []byte(doc), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchreport: wrote %s (%d results, took %s, failed: %v)\n", *out, len(r.Results), r.Ended.Sub(r.Started).Round(1e9), r.Failed)
	if len(r.Failed) > 0 {
		return fmt.Errorf("%d package(s) failed: %s", len(r.Failed), strings.Join(r.Failed, " "))
	}
	return nil
}

func gitOutput(args ...string) (string, error) {
	b, err := exec.Command("git", args...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(b)), nil
}
