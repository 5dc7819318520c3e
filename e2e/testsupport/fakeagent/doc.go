// Package fakeagent is test support: it stands in for gpuvc's node agents where
// no GPU and no agent container runs (kwok nodes). An Agent serves /metrics with
// the agent's own collector (gpu/nodeagent) over given utilization samples and
// device owners, behind httptest; RecordPod records an agent pod with the labels
// the chart gives the agents, whose status says it runs at the Agent's address,
// so the manager's agentmetrics.Source finds and scrapes it.
package fakeagent
