package gpucheck

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// SMI is nvidia-smi, the reference gpuvc's readings are compared with.
type SMI interface {
	// XML is `nvidia-smi -q -x`.
	XML(ctx context.Context) ([]byte, error)
	// Query is `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`:
	// one map of field to value per GPU.
	Query(ctx context.Context, fields ...string) ([]map[string]string, error)
}

// ExecSMI runs the nvidia-smi binary at Path ("nvidia-smi" when empty).
type ExecSMI struct{ Path string }

func (e ExecSMI) path() string {
	if e.Path == "" {
		return "nvidia-smi"
	}
	return e.Path
}

func (e ExecSMI) run(ctx context.Context, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, e.path(), args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", e.path(), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()+string(out)))
	}
	return out, nil
}

func (e ExecSMI) XML(ctx context.Context) ([]byte, error) { return e.run(ctx, "-q", "-x") }

func (e ExecSMI) Query(ctx context.Context, fields ...string) ([]map[string]string, error) {
	out, err := e.run(ctx, "--query-gpu="+strings.Join(fields, ","), "--format=csv,noheader,nounits")
	if err != nil {
		return nil, err
	}
	return parseQuery(out, fields)
}

// parseQuery reads nvidia-smi's CSV: one line per GPU, values in field order.
func parseQuery(out []byte, fields []string) ([]map[string]string, error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.TrimLeadingSpace = true
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("reading nvidia-smi's CSV: %w", err)
	}
	var rows []map[string]string
	for _, rec := range recs {
		if len(rec) != len(fields) {
			return nil, fmt.Errorf("nvidia-smi printed %d values for %d fields: %q", len(rec), len(fields), rec)
		}
		m := map[string]string{}
		for i, f := range fields {
			m[f] = strings.TrimSpace(rec[i])
		}
		rows = append(rows, m)
	}
	return rows, nil
}

// smiLog is the part of `nvidia-smi -q -x` the check reads.
type smiLog struct {
	DriverVersion string   `xml:"driver_version"`
	CUDAVersion   string   `xml:"cuda_version"`
	AttachedGPUs  int      `xml:"attached_gpus"`
	GPUs          []smiGPU `xml:"gpu"`
}

type smiGPU struct {
	ID           string `xml:"id,attr"`
	Product      string `xml:"product_name"`
	Architecture string `xml:"product_architecture"`
	UUID         string `xml:"uuid"`
	MIGMode      struct {
		Current string `xml:"current_mig"`
		Pending string `xml:"pending_mig"`
	} `xml:"mig_mode"`
	PCI struct {
		BusID string `xml:"pci_bus_id"`
	} `xml:"pci"`
	FB struct {
		Total    string `xml:"total"`
		Reserved string `xml:"reserved"`
		Used     string `xml:"used"`
	} `xml:"fb_memory_usage"`
}

func parseXML(b []byte) (smiLog, error) {
	var l smiLog
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false // nvidia-smi names a DTD that is not on the machine
	if err := d.Decode(&l); err != nil {
		return l, fmt.Errorf("reading nvidia-smi -q -x: %w", err)
	}
	return l, nil
}

// mib reads nvidia-smi's "143771 MiB".
func mib(s string) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "MiB")), 10, 64)
}
