package localnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
)

// iptables-nft creates the nftables tables behind iptables' (ip filter, ip nat,
// ip6 mangle, ...) on first use and never deletes them. The host records which
// tables exist when it is acquired and, at release, deletes the ones that
// appeared since and hold no rule, set or map: empty tables nobody else uses.

// nftTable is one nftables table, e.g. {ip filter}.
type nftTable struct {
	Family string `json:"family"`
	Name   string `json:"name"`
}

// nftObject is one element of `nft -j` output; only the kinds matter here.
type nftObject struct {
	Table *nftTable       `json:"table"`
	Rule  json.RawMessage `json:"rule"`
	Set   json.RawMessage `json:"set"`
	Map   json.RawMessage `json:"map"`
}

func nft(ctx context.Context, args ...string) ([]nftObject, error) {
	out, err := exec.CommandContext(ctx, "nft", append([]string{"-j"}, args...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("nft %v: %w", args, err)
	}
	var doc struct {
		Nftables []nftObject `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("nft %v: %w", args, err)
	}
	return doc.Nftables, nil
}

// nftTables lists the tables; nil without the nft tool.
func nftTables(ctx context.Context) ([]nftTable, error) {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, nil
	}
	objs, err := nft(ctx, "list", "tables")
	if err != nil {
		return nil, err
	}
	var tables []nftTable
	for _, o := range objs {
		if o.Table != nil {
			tables = append(tables, nftTable{Family: o.Table.Family, Name: o.Table.Name})
		}
	}
	return tables, nil
}

// deleteNewEmptyTables deletes the tables absent from before that are empty.
func deleteNewEmptyTables(ctx context.Context, before []nftTable) error {
	now, err := nftTables(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range now {
		if slices.Contains(before, t) {
			continue
		}
		objs, err := nft(ctx, "list", "table", t.Family, t.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if slices.ContainsFunc(objs, func(o nftObject) bool { return o.Rule != nil || o.Set != nil || o.Map != nil }) {
			continue
		}
		if out, err := exec.CommandContext(ctx, "nft", "delete", "table", t.Family, t.Name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft delete table %s %s: %w: %s", t.Family, t.Name, err, out))
		}
	}
	return errors.Join(errs...)
}
