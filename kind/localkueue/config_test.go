package localkueue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestConfigurationTurnsUsageHistoryOnOnlyWhenAsked: admissionFairSharing is
// Kueue-wide (Kueue then samples every LocalQueue), so it is written only for
// Options.UsageHistory, counting GPUs alone.
func TestConfigurationTurnsUsageHistoryOnOnlyWhenAsked(t *testing.T) {
	if _, ok := configuration(settings{})["admissionFairSharing"]; ok {
		t.Error("admissionFairSharing written without Options.UsageHistory")
	}
	got := configuration(settings{usageHistory: &UsageHistory{HalfLife: 10 * time.Second, SamplingInterval: time.Second}})["admissionFairSharing"]
	want := map[string]any{
		"usageHalfLifeTime":     "10s",
		"usageSamplingInterval": "1s",
		"resourceWeights":       map[string]float64{"cpu": 0, "memory": 0, "ephemeral-storage": 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("admissionFairSharing (-want +got):\n%s", diff)
	}
}
