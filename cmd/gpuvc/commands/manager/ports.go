package manager

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuvc/gpuvc/manager/idle"
)

// parsePortRange reads --waker-ports: FIRST-LAST, both between 1024 and 65535.
func parsePortRange(s string) (idle.PortRange, error) {
	first, last, ok := strings.Cut(s, "-")
	a, errA := strconv.Atoi(first)
	b, errB := strconv.Atoi(last)
	if !ok || errA != nil || errB != nil || a < 1024 || b > 65535 || a > b {
		return idle.PortRange{}, fmt.Errorf("--waker-ports %q: want FIRST-LAST with 1024 <= FIRST <= LAST <= 65535, e.g. 40000-40999", s)
	}
	return idle.PortRange{First: int32(a), Last: int32(b)}, nil
}
