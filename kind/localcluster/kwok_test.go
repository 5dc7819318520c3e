package localcluster

import (
	"testing"

	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// Every kwok node carries the annotation kwok selects on, and the share
// controller recognises it as a node where no container runs (so it records
// reservation UUIDs itself there, and only there).
func TestKwokNodesRunNoContainers(t *testing.T) {
	for _, p := range nodepool.Default() {
		for _, n := range p.Nodes {
			node, err := KwokNode(p, n)
			if err != nil {
				t.Fatal(err)
			}
			if node.Annotations[kwokNodeAnnotation] != "fake" {
				t.Errorf("node %s annotations %v: kwok manages only %s=fake", n.Name, node.Annotations, kwokNodeAnnotation)
			}
			if !share.RunsNoContainers(node.Labels, node.Annotations) {
				t.Errorf("node %s: the share controller would wait for a gpuvc reserve that never runs on kwok", n.Name)
			}
		}
	}
}
