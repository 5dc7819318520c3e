// Package testsupport is the root of what gpuvc's tests share: deadline-bounded
// waits (poll), object builders (testobj), acting as a component's
// ServiceAccount (identity), vCluster's pod syncer in-process (vcsync), the
// gpuvc binary built, run and started as a manager process (gpuvcbin) and the
// load harness with its benchmarks (bench). Only tests import these packages;
// TestProductLinksNoTestSupport keeps the shipped binary free of them.
package testsupport
