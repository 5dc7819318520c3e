package charts

import (
	"strings"
	"testing"
)

// TestSchemaRejects: values.schema.json refuses unknown keys, wrong types and values
// outside their choices, and the message names the key.
func TestSchemaRejects(t *testing.T) {
	cases := map[string]struct {
		values string
		want   []string // each must appear in the error
	}{
		"unknown top-level key":  {`replicas: 3`, []string{"replicas", "not allowed"}},
		"unknown nested key":     {`manager: {replica: 3}`, []string{"/manager", "replica"}},
		"misspelt cert-manager":  {`certManager: {enable: true}`, []string{"/certManager", "enable"}},
		"unknown toleration key": {`agent: {tolerations: [{key: a, operater: Exists}]}`, []string{"/agent/tolerations/0", "operater"}},
		"wrong type replicas":    {`manager: {replicas: "2"}`, []string{"/manager/replicas", "string", "integer"}},
		"wrong type flag":        {`certManager: {enabled: "yes"}`, []string{"/certManager/enabled", "boolean"}},
		"wrong type map":         {`manager: {nodeSelector: [a]}`, []string{"/manager/nodeSelector", "object"}},
		"wrong type port":        {`webhook: {port: 70000}`, []string{"/webhook/port", "maximum"}},
		"bad pull policy":        {`image: {pullPolicy: Sometimes}`, []string{"/image/pullPolicy", "IfNotPresent"}},
		"bad issuer kind":        {`certManager: {issuerRef: {name: ca, kind: Vault}}`, []string{"/certManager/issuerRef/kind", "ClusterIssuer"}},
		"bad toleration effect":  {`manager: {tolerations: [{key: a, operator: Exists, effect: NoRun}]}`, []string{"/manager/tolerations/0/effect"}},
		"bad duration":           {`agent: {interval: 5 minutes}`, []string{"/agent/interval"}},
		"chart version range":    {`vcluster: {chart: {version: "^0.36"}}`, []string{"/vcluster/chart/version"}},
		"relative chart dir":     {`vcluster: {chart: {dir: charts/vcluster}}`, []string{"/vcluster/chart/dir"}},
		"http team URL":          {`manager: {teamServerURL: "http://x"}`, []string{"/manager/teamServerURL"}},
		"timeout above 30":       {`webhook: {timeoutSeconds: 31}`, []string{"/webhook/timeoutSeconds", "30"}},
		"bad digest":             {`image: {digest: latest}`, []string{"/image/digest"}},
		"bad simulated pool":     {`agent: {simulate: {A100_pool: "product=x,count=1"}}`, []string{"/agent/simulate", "A100_pool"}},
		"reserved pod label":     {`manager: {podLabels: {app.kubernetes.io/name: x}}`, []string{"/manager/podLabels/app.kubernetes.io~1name"}},
		"affinity typo":          {`manager: {affinity: {nodeAfinity: {}}}`, []string{"/manager/affinity", "nodeAfinity"}},
		"replicas without leader election": {`manager: {replicas: 2, leaderElection: {enabled: false}}`,
			[]string{"/manager/replicas", "1"}},
		"zero replicas": {`manager: {replicas: 0}`, []string{"/manager/replicas"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := render(tc.values)
			if err == nil {
				t.Fatalf("values %s accepted", tc.values)
			}
			msg := err.Error()
			if !strings.Contains(msg, "values don't meet the specifications of the schema") {
				t.Errorf("values %s refused, but not by the schema: %v", tc.values, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("values %s: error does not mention %q:\n%s", tc.values, w, msg)
				}
			}
		})
	}
}

// TestSchemaAccepts: every documented value set and the edge values pass.
func TestSchemaAccepts(t *testing.T) {
	for _, values := range []string{
		`manager: {replicas: 1, leaderElection: {enabled: false}}`,
		`manager: {replicas: 1}`,
		`webhook: {timeoutSeconds: 30}`,
		`image: {tag: "1.0.0-rc.1_build.5"}`,
		`vcluster: {chart: {repo: "oci://ghcr.io/loft-sh/charts"}}`,
		`agent: {simulate: {a100: "product=NVIDIA-A100-SXM4-80GB,count=8,mig=2x1g.10gb,3g.40gb"}}`,
		`manager: {resources: {requests: {cpu: 1, memory: 1Gi, ephemeral-storage: 1Gi}}}`,
		`certManager: {duration: 8760h30m, renewBefore: 720h}`,
	} {
		if _, err := render(values); err != nil {
			t.Errorf("values %s refused: %v", values, err)
		}
	}
}
