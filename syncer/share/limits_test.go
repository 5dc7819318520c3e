package share

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLimitEnv(t *testing.T) {
	tests := map[string]struct {
		limits *FractionLimits
		mem    int64
		units  int
		want   map[string]string
	}{
		"off":                             {nil, 40960, 5000, map[string]string{}},
		"half an 80 GB GPU":               {&FractionLimits{ReserveMiB: 256}, 40960, 5000, map[string]string{"CUDA_DEVICE_MEMORY_LIMIT_0": "40704m", "CUDA_DEVICE_SM_LIMIT": "50"}},
		"no reserve":                      {&FractionLimits{}, 24576, 3000, map[string]string{"CUDA_DEVICE_MEMORY_LIMIT_0": "24576m", "CUDA_DEVICE_SM_LIMIT": "30"}},
		"reserve above half a tiny share": {&FractionLimits{ReserveMiB: 256}, 300, 37, map[string]string{"CUDA_DEVICE_MEMORY_LIMIT_0": "150m", "CUDA_DEVICE_SM_LIMIT": "1"}},
		"percent rounds up":               {&FractionLimits{ReserveMiB: 0}, 10000, 3333, map[string]string{"CUDA_DEVICE_MEMORY_LIMIT_0": "10000m", "CUDA_DEVICE_SM_LIMIT": "34"}},
		"whole GPU":                       {&FractionLimits{ReserveMiB: 256}, 81920, 10000, map[string]string{"CUDA_DEVICE_MEMORY_LIMIT_0": "81664m", "CUDA_DEVICE_SM_LIMIT": "100"}},
		"memory unknown: SM only":         {&FractionLimits{ReserveMiB: 256}, 0, 2500, map[string]string{"CUDA_DEVICE_SM_LIMIT": "25"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := map[string]string{}
			limitEnv(got, tc.limits, tc.mem, tc.units)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}
