package vclusters

// MergeValues returns base with over deep-merged into it: maps merge key by key,
// anything else in over (lists, scalars, nil) replaces what base has. Neither
// argument is modified.
func MergeValues(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bm, bok := out[k].(map[string]any)
		om, ook := v.(map[string]any)
		if bok && ook {
			out[k] = MergeValues(bm, om)
			continue
		}
		out[k] = v
	}
	return out
}
