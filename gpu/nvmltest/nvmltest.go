// Package nvmltest is test support: go-nvml mocks for the packages that read
// GPUs through NVML (the agent's inventory, the reservation pod's UUID). Only
// tests import it.
package nvmltest

import (
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// DriverVersion is the driver version the A100s report.
const DriverVersion = "580.65.06"

// UUID is the UUID of the i-th GPU of A100s.
func UUID(i int) string { return fmt.Sprintf("GPU-%d", i) }

// A100s is go-nvml's mock server with n A100-SXM4-80GB (MIG capable, MIG off)
// whose UUIDs are UUID(i), fixed so tests can name them.
func A100s(t testing.TB, n int) *server.Server {
	t.Helper()
	s, err := server.New(server.WithGPUs(gpus.Multiple(n, gpus.A100_SXM4_80GB)...), server.WithDriverVersion(DriverVersion))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range s.Devices {
		d.(*server.Device).UUID = UUID(i)
	}
	return s
}

// InitFails is a library whose Init returns ret and nothing else answers:
// nvml.ERROR_LIBRARY_NOT_FOUND is a machine without the NVIDIA driver.
func InitFails(ret nvml.Return) nvml.Interface {
	return &mock.Interface{InitFunc: func() nvml.Return { return ret }}
}

// NoDriver is a machine without the NVIDIA driver.
func NoDriver() nvml.Interface { return InitFails(nvml.ERROR_LIBRARY_NOT_FOUND) }
