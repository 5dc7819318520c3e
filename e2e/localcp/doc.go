// Package localcp is the test harness of the local cluster (kind/localcluster): it
// builds the binaries from Go modules (wrapper modules under tools/, cached outside
// the repository, listed in the manifest the product reads), starts one control
// plane per test package (RunTests, ForTest) and builds what it needs before
// starting one (Start). Only tests and the builder command import it; the gpuvc
// binary never does.
package localcp
