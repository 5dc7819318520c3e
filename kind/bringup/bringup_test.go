package bringup_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/kind/bringup"
)

func TestRunAnnouncesEachStepAndStopsAtTheFirstFailure(t *testing.T) {
	var ran []string
	step := func(name string, err error) bringup.Step {
		return bringup.Step{Name: name, Run: func(context.Context) error {
			ran = append(ran, name)
			return err
		}}
	}
	boom := errors.New("boom")
	var log bytes.Buffer
	err := bringup.Run(context.Background(), "demo", &log, []bringup.Step{step("one", nil), step("two", boom), step("three", nil)})

	if !errors.Is(err, boom) {
		t.Fatalf("error %v does not wrap the step's", err)
	}
	if want := "demo: step 2 of 3, two: boom"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if diff := cmp.Diff([]string{"one", "two"}, ran); diff != "" {
		t.Errorf("steps run (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("demo: [1/3] one\ndemo: [2/3] two\n", log.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestRunStartsNoStepOnceTheContextEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	steps := []bringup.Step{
		{Name: "cancel", Run: func(context.Context) error { cancel(); return nil }},
		{Name: "never", Run: func(context.Context) error { ran = true; return nil }},
	}
	err := bringup.Run(ctx, "demo", nil, steps)
	if ran || !errors.Is(err, context.Canceled) || err.Error() != "demo: step 2 of 2, never: context canceled" {
		t.Errorf("ran %v, error %v: want the second step named and not run", ran, err)
	}
}

func TestNamesAndUpto(t *testing.T) {
	noop := func(context.Context) error { return nil }
	steps := []bringup.Step{{Name: "a", Run: noop}, {Name: "b", Run: noop}, {Name: "c", Run: noop}}
	if diff := cmp.Diff([]string{"a", "b", "c"}, bringup.Names(steps)); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a"}, bringup.Names(bringup.Upto(steps, "b"))); diff != "" {
		t.Errorf("Upto b (-want +got):\n%s", diff)
	}
	if got := len(bringup.Upto(steps, "missing")); got != 3 {
		t.Errorf("Upto an unknown step kept %d steps, want all 3", got)
	}
}
