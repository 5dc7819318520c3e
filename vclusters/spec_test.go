package vclusters

import (
	"strings"
	"testing"
)

func TestSpecValidate(t *testing.T) {
	cases := map[string]struct {
		spec    Spec
		wantErr []string // substrings; none means valid
	}{
		"valid":                     {spec: makeSpec()},
		"server with IP and port":   {spec: makeSpec(func(s *Spec) { s.KubeconfigServer = "https://10.0.0.5:6443" })},
		"missing name":              {spec: makeSpec(func(s *Spec) { s.Name = "" }), wantErr: []string{"Name: must be set"}},
		"name not a DNS-1035 label": {spec: makeSpec(func(s *Spec) { s.Name = "1team" }), wantErr: []string{"Name:"}},
		"name too long for Helm": {spec: makeSpec(func(s *Spec) { s.Name = strings.Repeat("a", 54) }),
			wantErr: []string{"at most 53"}},
		"bad namespace":  {spec: makeSpec(func(s *Spec) { s.Namespace = "Team_A" }), wantErr: []string{"Namespace:"}},
		"missing pool":   {spec: makeSpec(func(s *Spec) { s.Pool = "" }), wantErr: []string{"Pool: must be set"}},
		"pool not label": {spec: makeSpec(func(s *Spec) { s.Pool = "a100 pool" }), wantErr: []string{"Pool:"}},
		"control-plane pool not label": {spec: makeSpec(func(s *Spec) { s.ControlPlanePool = "-x" }),
			wantErr: []string{"ControlPlanePool:"}},
		"missing server": {spec: makeSpec(func(s *Spec) { s.KubeconfigServer = "" }),
			wantErr: []string{"KubeconfigServer: must be set"}},
		"http server": {spec: makeSpec(func(s *Spec) { s.KubeconfigServer = "http://fraud.example.com" }),
			wantErr: []string{"https://"}},
		"server with path": {spec: makeSpec(func(s *Spec) { s.KubeconfigServer = "https://fraud.example.com/api" }),
			wantErr: []string{"path"}},
		"every problem reported": {spec: Spec{},
			wantErr: []string{"Name:", "Namespace:", "Pool:", "KubeconfigServer:"}},
		"chart problems named": {spec: makeSpec(func(s *Spec) { s.Chart = ChartSource{Version: "~0.36"} }),
			wantErr: []string{"Chart: Version"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			requireValidation(t, tc.spec.Validate(), tc.wantErr)
		})
	}
}

// requireValidation checks a Validate result: nil when want is empty, else an
// error that mentions every substring of want.
func requireValidation(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("want valid, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want errors %q, got none", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}
