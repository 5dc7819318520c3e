package health

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// Injected reads failures of simulated GPUs from a file, one per line, as
// tests and operators append them:
//
//	<gpu> xid=<n>     a critical XID (application XIDs are ignored, as on NVML)
//	<gpu> ecc         a double-bit ECC error
//	<gpu> lost        the GPU fell off the bus
//
// <gpu> is an index or a UUID of the inventory. Lines that start with # and
// blank lines are skipped; a malformed line is reported through Invalid and
// skipped. The file may not exist yet; it is read from its start, then
// followed (polled every Poll).
type Injected struct {
	Path      string
	Inventory inventory.Inventory
	// Poll is the time between two reads of the file; zero means 250ms.
	Poll time.Duration
	// IgnoreXIDs as in NVML.
	IgnoreXIDs []uint64
	// Invalid is told about lines it cannot read; nil drops them.
	Invalid func(line string, err error)
}

var _ Watcher = Injected{}

// Watch follows the file until ctx ends.
func (in Injected) Watch(ctx context.Context, report func(Event)) error {
	if in.Path == "" {
		return errors.New("no injection file given")
	}
	poll := in.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	var offset int64
	var partial []byte
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		chunk, err := readFrom(in.Path, offset)
		if err != nil {
			return err
		}
		offset += int64(len(chunk))
		partial = append(partial, chunk...)
		for {
			i := bytes.IndexByte(partial, '\n')
			if i < 0 {
				break
			}
			line := string(partial[:i])
			partial = partial[i+1:]
			e, ok, err := in.parse(line)
			switch {
			case err != nil && in.Invalid != nil:
				in.Invalid(line, err)
			case ok:
				report(e)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// readFrom returns what the file holds after offset; a missing file holds
// nothing yet.
func readFrom(path string, offset int64) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("GPU failure injection file: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("reading GPU failure injection file %s: %w", path, err)
	}
	return b, nil
}

// parse reads one line; ok is false for lines that report nothing (blank,
// comments, non-critical XIDs).
func (in Injected) parse(line string) (Event, bool, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
		return Event{}, false, nil
	}
	if len(fields) != 2 {
		return Event{}, false, fmt.Errorf("want \"<gpu index or UUID> xid=<n>|ecc|lost\", got %d fields", len(fields))
	}
	g, err := in.gpu(fields[0])
	if err != nil {
		return Event{}, false, err
	}
	e := Event{Index: g.Index, UUID: g.UUID}
	switch what := fields[1]; {
	case what == "ecc":
		e.Kind = KindDoubleBitECC
	case what == "lost":
		e.Kind = KindLost
	case strings.HasPrefix(what, "xid="):
		xid, err := strconv.ParseUint(strings.TrimPrefix(what, "xid="), 10, 64)
		if err != nil {
			return Event{}, false, fmt.Errorf("%q: the XID must be a number", what)
		}
		if !Critical(xid, in.IgnoreXIDs) {
			return Event{}, false, nil
		}
		e.Kind, e.XID = KindXID, xid
	default:
		return Event{}, false, fmt.Errorf("%q is not xid=<n>, ecc or lost", what)
	}
	return e, true, nil
}

func (in Injected) gpu(s string) (inventory.GPU, error) {
	for _, g := range in.Inventory.GPUs {
		if g.UUID == s || strconv.Itoa(g.Index) == s {
			return g, nil
		}
	}
	return inventory.GPU{}, fmt.Errorf("no GPU %q on this node (indexes 0-%d or their UUIDs)", s, len(in.Inventory.GPUs)-1)
}
