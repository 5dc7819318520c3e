package gpucheck

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Workloads start the GPU programs the usage and fraction steps watch.
type Workloads interface {
	// Busy keeps the GPU with this UUID busy with matrix products and
	// returns once they run; stop ends the program.
	Busy(ctx context.Context, uuid string) (stop func(), err error)
	// Allocate starts a process that tries to allocate mib MiB on the GPU
	// with env added to its environment and holds what it got until stop.
	Allocate(ctx context.Context, uuid string, mib int64, env []string) (Allocation, func(), error)
}

// Allocation is what the allocating process reported.
type Allocation struct {
	PID int
	// Allocated is true when the allocation succeeded; Message is the
	// error it met otherwise.
	Allocated bool
	Message   string
}

// PyTorch runs the workloads as python3 programs with PyTorch: what a team's
// training container does, with nothing of gpuvc in it.
type PyTorch struct {
	// Python is the interpreter (python3 when empty).
	Python string
	// Lifetime bounds every program, so none outlives a killed check (2 min
	// when zero).
	Lifetime time.Duration
}

// busyScript multiplies bf16 matrices until its lifetime ends.
const busyScript = `
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = a @ a
torch.cuda.synchronize()
print("READY", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    b = a @ a
    torch.cuda.synchronize()
`

// allocateScript allocates argv[1] MiB and holds it.
const allocateScript = `
import sys, time, torch
try:
    x = torch.empty(int(sys.argv[1]) * 1024 * 1024, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    print("ALLOCATED", flush=True)
except Exception as e:
    print("REFUSED " + str(e).splitlines()[0], flush=True)
time.sleep(float(sys.argv[2]))
`

func (p PyTorch) lifetime() string {
	l := p.Lifetime
	if l <= 0 {
		l = 2 * time.Minute
	}
	return strconv.FormatFloat(l.Seconds(), 'f', 0, 64)
}

func (p PyTorch) start(ctx context.Context, uuid string, env []string, script string, args ...string) (*exec.Cmd, *bufio.Reader, error) {
	python := p.Python
	if python == "" {
		python = "python3"
	}
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	// The program sees only the GPU under test, as a container given it would.
	cmd.Env = append(append(os.Environ(), "CUDA_VISIBLE_DEVICES="+uuid), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", python, err)
	}
	r := bufio.NewReader(out)
	line := make(chan string, 1)
	go func() {
		l, _ := r.ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		if l == "" {
			_ = cmd.Wait()
			return nil, nil, fmt.Errorf("%s ended before it was ready: %s", python, lastLine(stderr.String()))
		}
		return cmd, bufio.NewReader(strings.NewReader(l + "\n")), nil
	case <-ctx.Done():
		stop(cmd)
		return nil, nil, fmt.Errorf("%s not ready: %w", python, ctx.Err())
	}
}

func (p PyTorch) Busy(ctx context.Context, uuid string) (func(), error) {
	cmd, _, err := p.start(ctx, uuid, nil, busyScript, p.lifetime())
	if err != nil {
		return nil, err
	}
	return func() { stop(cmd) }, nil
}

func (p PyTorch) Allocate(ctx context.Context, uuid string, mib int64, env []string) (Allocation, func(), error) {
	cmd, first, err := p.start(ctx, uuid, env, allocateScript, strconv.FormatInt(mib, 10), p.lifetime())
	if err != nil {
		return Allocation{}, nil, err
	}
	l, _ := first.ReadString('\n')
	l = strings.TrimSpace(l)
	a := Allocation{PID: cmd.Process.Pid, Allocated: l == "ALLOCATED", Message: strings.TrimPrefix(l, "REFUSED ")}
	return a, func() { stop(cmd) }, nil
}

// stop kills a program; its exit status says nothing, it was killed on purpose.
func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
