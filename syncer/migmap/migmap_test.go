package migmap

import "testing"

func TestCatalog(t *testing.T) {
	const a100 = "NVIDIA-A100-SXM4-80GB"
	c := Catalog{}
	for profile, want := range map[string]bool{"1g.10gb": true, "3g.40gb": true, "1g.12gb": false, "1g.5gb": false} {
		if got, err := c.Offers(a100, profile); err != nil || got != want {
			t.Errorf("Offers(%s) = %v, %v; want %v", profile, got, err, want)
		}
	}
	cases := map[string]struct {
		profile    string
		candidates []string
		want       string // "" = error
	}{
		"NVL 1g.12gb needs 12 GB":             {"1g.12gb", []string{"1g.10gb", "2g.20gb"}, "2g.20gb"},
		"A100-40GB 1g.5gb fits the smallest":  {"1g.5gb", []string{"2g.20gb", "1g.10gb"}, "1g.10gb"},
		"only candidates count":               {"1g.12gb", []string{"3g.40gb"}, "3g.40gb"},
		"nothing large enough":                {"7g.94gb", []string{"1g.10gb", "2g.20gb"}, ""},
		"candidates the model does not offer": {"1g.12gb", []string{"1g.24gb"}, ""},
		"invalid name":                        {"big", []string{"1g.10gb"}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := c.Map(a100, tc.profile, tc.candidates)
			if tc.want == "" {
				if err == nil {
					t.Errorf("mapped to %s, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %s", got, err, tc.want)
			}
		})
	}
	if _, err := c.Offers("NVIDIA-GeForce-RTX-4090", "1g.10gb"); err == nil {
		t.Error("unknown product accepted")
	}
}
