package share

import (
	"math"
	"strings"
	"testing"
)

func TestUnits(t *testing.T) {
	tests := map[string]struct {
		req    Request
		gpuMiB int64
		want   int
	}{
		"half":                      {Fraction(0.5), 81920, 5000},
		"float noise 0.3":           {Fraction(0.3), 81920, 3000},
		"float noise 0.1+0.2":       {Fraction(0.1 + 0.2), 81920, 3000},
		"quarter":                   {Fraction(0.25), 81920, 2500},
		"rounds up":                 {Fraction(0.33335), 81920, 3334},
		"third":                     {Fraction(1.0 / 3), 81920, 3334},
		"tiny is one unit":          {Fraction(1e-9), 81920, 1},
		"just under one":            {Fraction(0.99999), 81920, 10000},
		"memory half":               {Memory(40960), 81920, 5000},
		"memory rounds up":          {Memory(8193), 81920, 1001},
		"memory one MiB":            {Memory(1), 81920, 1},
		"memory whole GPU":          {Memory(81920), 81920, 10000},
		"memory on a 40GB GPU":      {Memory(10240), 40960, 2500},
		"memory on an odd-size GPU": {Memory(10000), 81559, 1227},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.req.Units(tc.gpuMiB)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%v on %d MiB = %d units, want %d", tc.req, tc.gpuMiB, got, tc.want)
			}
		})
	}
}

func TestUnitsErrors(t *testing.T) {
	tests := map[string]struct {
		req  Request
		want []string // substrings: the value and the limit
	}{
		"NaN":           {Fraction(math.NaN()), []string{"gpu-fraction NaN", "greater than 0 and less than 1"}},
		"+Inf":          {Fraction(math.Inf(1)), []string{"gpu-fraction +Inf", "less than 1"}},
		"-Inf":          {Fraction(math.Inf(-1)), []string{"gpu-fraction -Inf", "greater than 0"}},
		"zero":          {Fraction(0), []string{"gpu-fraction 0", "greater than 0"}},
		"negative":      {Fraction(-0.25), []string{"gpu-fraction -0.25", "greater than 0"}},
		"one":           {Fraction(1), []string{"gpu-fraction 1", "less than 1"}},
		"above one":     {Fraction(1.5), []string{"gpu-fraction 1.5", "less than 1"}},
		"memory zero":   {Request{}, []string{"gpu-fraction 0"}},
		"memory neg":    {Memory(-1), []string{"gpu-memory -1 MiB", "positive"}},
		"memory above":  {Memory(81921), []string{"gpu-memory 81921 MiB", "81920 MiB"}},
		"both set":      {Request{Fraction: 0.5, MemoryMiB: 100}, []string{"exclusive"}},
		"both negative": {Request{Fraction: -1, MemoryMiB: -1}, []string{"exclusive"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.req.Units(81920)
			if err == nil {
				t.Fatalf("Units() = %d, want error", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLowerBound(t *testing.T) {
	tests := map[string]struct {
		units []int
		want  int
	}{
		"none":            {nil, 0},
		"one unit":        {[]int{1}, 1},
		"exactly one GPU": {[]int{5000, 5000}, 1},
		"just over":       {[]int{5000, 5001}, 2},
		"three thirds":    {[]int{3334, 3334, 3334}, 2}, // rounding up costs a GPU here
		"many small":      {[]int{2500, 2500, 2500, 2500, 2500}, 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := LowerBound(tc.units...); got != tc.want {
				t.Errorf("LowerBound(%v) = %d, want %d", tc.units, got, tc.want)
			}
		})
	}
}

func TestParseRequest(t *testing.T) {
	tests := map[string]struct {
		fraction, memory string
		want             Request
		wantErr          string
	}{
		"fraction":         {fraction: "0.5", want: Fraction(0.5)},
		"fraction spaces":  {fraction: " 0.25 ", want: Fraction(0.25)},
		"memory":           {memory: "20480", want: Memory(20480)},
		"both":             {fraction: "0.5", memory: "100", wantErr: `gpu-fraction "0.5" and gpu-memory "100" are exclusive`},
		"neither":          {wantErr: "neither gpu-fraction nor gpu-memory is set"},
		"fraction word":    {fraction: "half", wantErr: `gpu-fraction "half" is not a number`},
		"fraction one":     {fraction: "1", wantErr: "gpu-fraction 1 is out of range; it must be greater than 0 and less than 1"},
		"fraction NaN":     {fraction: "NaN", wantErr: "gpu-fraction NaN is not a finite number"},
		"memory decimal":   {memory: "1.5", wantErr: `gpu-memory "1.5" is not a whole number of MiB`},
		"memory unit":      {memory: "20Gi", wantErr: `gpu-memory "20Gi" is not a whole number of MiB`},
		"memory zero":      {memory: "0", wantErr: "gpu-memory 0 MiB must be positive"},
		"fraction percent": {fraction: "50%", wantErr: `gpu-fraction "50%" is not a number`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseRequest(tc.fraction, tc.memory)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseRequest() = %v, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseRequest() = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
