package supervise

import (
	"testing"
	"time"

	"context"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestStopEndsTheProcess(t *testing.T) {
	p, err := Start("sleeper", "/bin/sleep", []string{"30"}, nil, t.TempDir(), false)
	require.NoError(t, err)
	require.NoError(t, p.Exited(), "still running")
	require.True(t, Alive(p.PID()))
	require.NoError(t, p.Stop(5*time.Second))
	require.False(t, Alive(p.PID()))
}

func TestExitedNamesTheLogTail(t *testing.T) {
	p, err := Start("crasher", "/bin/sh", []string{"-c", "echo first; echo boom: $WHY; exit 3"}, []string{"WHY=bad flag"}, t.TempDir(), false)
	require.NoError(t, err)
	var exited error
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		exited = p.Exited()
		return exited != nil, nil
	}))
	require.ErrorContains(t, exited, "crasher exited (exit status 3)")
	require.ErrorContains(t, exited, "first\nboom: bad flag")
}
