package localkueue

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// configuration is the part of Kueue's Configuration (config.kueue.x-k8s.io/v1beta2)
// the local runner sets. Kept as plain maps: the runner needs none of Kueue's Go
// packages, whose k8s.io versions differ from gpuvc's.
func configuration(o settings) map[string]any {
	c := map[string]any{
		"apiVersion": "config.kueue.x-k8s.io/v1beta2",
		"kind":       "Configuration",
		"namespace":  o.namespace,
		"health":     map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", o.healthPort)},
		// "0" turns the metrics server off: it would want authentication against
		// the API server and a port of its own, and tests read Kueue's objects instead.
		"metrics":        map[string]any{"bindAddress": "0"},
		"webhook":        map[string]any{"host": "127.0.0.1", "port": o.webhookPort, "certDir": o.certDir},
		"leaderElection": map[string]any{"leaderElect": false},
		// Certificates are provided (ours, for 127.0.0.1): Kueue's own rotator
		// would issue them for an in-cluster Service name the API server cannot dial.
		"internalCertManagement": map[string]any{"enable": false},
		"integrations":           map[string]any{"frameworks": []string{"pod"}},
		// Fair sharing among the ClusterQueues of a cohort, with Kueue's default
		// preemption strategies.
		"fairSharing": map[string]any{"preemptionStrategies": []string{"LessThanOrEqualToFinalShare", "LessThanInitialShare"}},
		// The visibility API server would need an APIService and a port of its own.
		"featureGates": map[string]bool{"VisibilityOnDemand": false},
		// As Kueue's own manifests install it (config/components/manager/
		// controller_manager_config.yaml): left out, every controller runs one
		// worker under client-go's 20 QPS, and admitted pods wait seconds for
		// their gate to go under load (BenchmarkPoolUtilization).
		"controller": map[string]any{"groupKindConcurrency": map[string]int{
			"Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 5,
			"LocalQueue.kueue.x-k8s.io": 1, "Cohort.kueue.x-k8s.io": 1,
			"ClusterQueue.kueue.x-k8s.io": 1, "ResourceFlavor.kueue.x-k8s.io": 1,
		}},
		"clientConnection": map[string]any{"qps": 50, "burst": 100},
	}
	if h := o.usageHistory; h != nil {
		c["admissionFairSharing"] = map[string]any{
			"usageHalfLifeTime":     h.HalfLife.String(),
			"usageSamplingInterval": h.SamplingInterval.String(),
			"resourceWeights":       map[string]float64{"cpu": 0, "memory": 0, "ephemeral-storage": 0},
		}
	}
	return c
}

// settings are the values a local Kueue's configuration is made of.
type settings struct {
	namespace   string
	healthPort  int
	webhookPort int
	certDir     string
	// usageHistory: admission fair sharing on (Options.UsageHistory).
	usageHistory *UsageHistory
}

// writeConfiguration writes Kueue's configuration file into dir and returns its path.
func writeConfiguration(dir string, o settings) (string, error) {
	b, err := yaml.Marshal(configuration(o))
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kueue-config.yaml")
	return path, os.WriteFile(path, b, 0o600)
}
