package complement

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const (
	testLimit     = 32
	testMaxValues = 256
)

// strs writes selectors as Kubernetes writes them (labels.Selector's String).
func strs(t *testing.T, sels []metav1.LabelSelector) []string {
	t.Helper()
	out := []string{}
	for _, s := range sels {
		ls, err := metav1.LabelSelectorAsSelector(&s)
		if err != nil {
			t.Fatalf("invalid selector written: %v", err)
		}
		out = append(out, ls.String())
	}
	return out
}

func req(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

// vcluster is a selector as vCluster writes a team's podSelector on the host:
// the team's labels plus the virtual namespace and the vCluster marker.
func vcluster(ns string, team map[string]string, exprs ...metav1.LabelSelectorRequirement) metav1.LabelSelector {
	m := map[string]string{"vcluster.loft.sh/namespace": ns, "vcluster.loft.sh/managed-by": "day"}
	for k, v := range team {
		m[k] = v
	}
	return metav1.LabelSelector{MatchLabels: m, MatchExpressions: exprs}
}

// TestComplementReadsAsWritten: the complements gpuvc writes for typical team
// policies, one case per operator, as a platform engineer reads them with
// kubectl.
func TestComplementReadsAsWritten(t *testing.T) {
	for name, tc := range map[string]struct {
		in   []metav1.LabelSelector
		want []string
	}{
		"no team policy: every pod": {
			want: []string{""},
		},
		"an empty selector selects every pod: nothing is left": {
			in:   []metav1.LabelSelector{{}},
			want: []string{},
		},
		"matchLabels": {
			in:   []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}},
			want: []string{"app notin (web)"},
		},
		"two labels: either differs": {
			in:   []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web", "tier": "front"}}},
			want: []string{"app notin (web)", "tier notin (front)"},
		},
		"In": {
			in:   []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", metav1.LabelSelectorOpIn, "web", "api")}}},
			want: []string{"app notin (api,web)"},
		},
		"NotIn": {
			in:   []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", metav1.LabelSelectorOpNotIn, "web", "api")}}},
			want: []string{"app in (api,web)"},
		},
		"Exists": {
			in:   []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{req("db", metav1.LabelSelectorOpExists)}}},
			want: []string{"!db"},
		},
		"DoesNotExist": {
			in:   []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{req("db", metav1.LabelSelectorOpDoesNotExist)}}},
			want: []string{"db"},
		},
		"policies on one key merge into one NotIn": {
			in: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"app": "web"}},
				{MatchLabels: map[string]string{"app": "db"}},
				{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", metav1.LabelSelectorOpIn, "cache")}},
			},
			want: []string{"app notin (cache,db,web)"},
		},
		"a policy on a key and one on its absence leave the other values": {
			in: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"app": "web"}},
				{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", metav1.LabelSelectorOpDoesNotExist)}},
			},
			want: []string{"app,app notin (web)"},
		},
		"vCluster's copy of one policy": {
			in: []metav1.LabelSelector{vcluster("default", map[string]string{"app": "web"})},
			want: []string{
				"app notin (web)",
				"vcluster.loft.sh/managed-by notin (day)",
				"vcluster.loft.sh/namespace notin (default)",
			},
		},
		"vCluster's copy of an empty podSelector: the namespace's other pods": {
			in: []metav1.LabelSelector{vcluster("default", nil)},
			want: []string{
				"vcluster.loft.sh/managed-by notin (day)",
				"vcluster.loft.sh/namespace notin (default)",
			},
		},
		"policies in two virtual namespaces: split by a pinned key, not a product": {
			in: []metav1.LabelSelector{
				vcluster("default", map[string]string{"app": "web"}),
				vcluster("prod", map[string]string{"app": "db"}),
			},
			// Four, where expanding the product takes five: web outside
			// default, db outside prod, neither, and pods vCluster did not sync.
			want: []string{
				"app=db,vcluster.loft.sh/namespace notin (prod)",
				"app=web,vcluster.loft.sh/namespace notin (default)",
				"app notin (db,web)",
				"vcluster.loft.sh/managed-by notin (day)",
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Of(tc.in, testLimit, testMaxValues)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, strs(t, got.Selectors)); diff != "" {
				t.Errorf("complement (-want +got):\n%s", diff)
			}
			checkComplement(t, tc.in, got.Selectors, universe(keysOf(tc.in), []string{"web", "api", "db", "cache", "front", "default", "prod", "day", "x"}))
		})
	}
}

// TestComplementOverTheLimit: selectors whose complement needs more selectors
// than the limit give none, and say how many it took (at least).
func TestComplementOverTheLimit(t *testing.T) {
	var sels []metav1.LabelSelector
	for i := range 6 { // six selectors on two keys each, no key shared: 2^6 conjunctions
		sels = append(sels, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			req(fmt.Sprintf("a%d", i), metav1.LabelSelectorOpExists), req(fmt.Sprintf("b%d", i), metav1.LabelSelectorOpExists)}})
	}
	got, err := Of(sels, testLimit, testMaxValues)
	if err != nil {
		t.Fatal(err)
	}
	if got.Selectors != nil || got.Needed <= testLimit {
		t.Fatalf("want nothing and a count over %d, got %d selectors, needed %d", testLimit, len(got.Selectors), got.Needed)
	}
	fits, err := Of(sels[:5], testLimit, testMaxValues)
	if err != nil {
		t.Fatal(err)
	}
	if len(fits.Selectors) != 32 || fits.Needed != 32 {
		t.Fatalf("five selectors: want 32, got %d (needed %d)", len(fits.Selectors), fits.Needed)
	}

	long := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", metav1.LabelSelectorOpIn, strings.Split("a b c d e f g h i j", " ")...)}}
	tooLong, err := Of([]metav1.LabelSelector{long}, testLimit, 5)
	if err != nil {
		t.Fatal(err)
	}
	if tooLong.Selectors != nil {
		t.Fatalf("a selector of 11 keys and values passed a bound of 5: %v", strs(t, tooLong.Selectors))
	}
}

func TestComplementRefusesAnUnknownOperator(t *testing.T) {
	_, err := Of([]metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{req("app", "Near", "web")}}}, testLimit, testMaxValues)
	if err == nil || !strings.Contains(err.Error(), `operator "Near"`) || !strings.Contains(err.Error(), `"app"`) {
		t.Fatalf("want an error naming the key and the operator, got %v", err)
	}
}

// TestComplementBruteForce: for random selectors over three keys and three
// values, the complement selects exactly the label sets no selector selects,
// checked on every label set (each key absent or one of the values, and one
// more value no selector names), with Kubernetes' own selector matching.
func TestComplementBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 2026))
	keys, values := []string{"a", "b", "c"}, []string{"1", "2", "3"}
	all := universe(keys, append(values, "other"))
	ops := []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist}
	checked := 0
	for trial := range 3000 {
		var sels []metav1.LabelSelector
		for range 1 + rng.IntN(5) {
			var s metav1.LabelSelector
			for range rng.IntN(4) {
				k := keys[rng.IntN(len(keys))]
				if rng.IntN(3) == 0 {
					if s.MatchLabels == nil {
						s.MatchLabels = map[string]string{}
					}
					s.MatchLabels[k] = values[rng.IntN(len(values))]
					continue
				}
				op := ops[rng.IntN(len(ops))]
				var vs []string
				if op == metav1.LabelSelectorOpIn || op == metav1.LabelSelectorOpNotIn {
					for _, v := range values {
						if rng.IntN(2) == 0 {
							vs = append(vs, v)
						}
					}
					if len(vs) == 0 {
						vs = []string{values[rng.IntN(len(values))]}
					}
				}
				s.MatchExpressions = append(s.MatchExpressions, req(k, op, vs...))
			}
			sels = append(sels, s)
		}
		got, err := Of(sels, 1000, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if got.Selectors == nil {
			t.Fatalf("trial %d: over a limit of 1000 (needed %d) for %v", trial, got.Needed, sels)
		}
		if !checkComplement(t, sels, got.Selectors, all) {
			t.Fatalf("trial %d: selectors %v", trial, sels)
		}
		checked++
	}
	t.Logf("%d random selector sets checked on %d label sets each", checked, len(all))
}

// checkComplement reports (and fails t) unless out selects exactly the label
// sets of all that no selector of in selects.
func checkComplement(t *testing.T, in, out []metav1.LabelSelector, all []labels.Set) bool {
	t.Helper()
	compile := func(sels []metav1.LabelSelector) []labels.Selector {
		var out []labels.Selector
		for _, s := range sels {
			ls, err := metav1.LabelSelectorAsSelector(&s)
			if err != nil {
				t.Fatalf("selector %v: %v", s, err)
			}
			out = append(out, ls)
		}
		return out
	}
	team, comp := compile(in), compile(out)
	match := func(sels []labels.Selector, l labels.Set) bool {
		for _, s := range sels {
			if s.Matches(l) {
				return true
			}
		}
		return false
	}
	for _, l := range all {
		if match(team, l) == match(comp, l) {
			t.Errorf("labels %v: selected by the team's selectors %v and by the complement %v", l, match(team, l), strs(t, out))
			return false
		}
	}
	return true
}

// universe lists every label set over keys: each key absent or one of values.
func universe(keys, values []string) []labels.Set {
	sets := []labels.Set{{}}
	for _, k := range keys {
		var next []labels.Set
		for _, s := range sets {
			next = append(next, s)
			for _, v := range values {
				n := labels.Set{k: v}
				for kk, vv := range s {
					n[kk] = vv
				}
				next = append(next, n)
			}
		}
		sets = next
	}
	return sets
}

func keysOf(sels []metav1.LabelSelector) []string {
	seen := map[string]bool{}
	var keys []string
	for _, s := range sels {
		for k := range s.MatchLabels {
			if !seen[k] {
				seen[k], keys = true, append(keys, k)
			}
		}
		for _, r := range s.MatchExpressions {
			if !seen[r.Key] {
				seen[r.Key], keys = true, append(keys, r.Key)
			}
		}
	}
	return keys
}
