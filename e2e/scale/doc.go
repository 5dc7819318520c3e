// Package scale holds gpuvc's scale benchmark (tests only): `gpuvc manager` run
// as its own process, as a developer runs it against any cluster, on the local
// control plane with kwok nodes large enough for thousands of pods, measured
// from outside — team creation latency, a cold start with many Teams waiting,
// the process's RSS and CPU as teams and pods are added. BENCH_SCALE=full runs
// 100 teams and 10,000 pods; the default (small) 30 teams and 1,000 pods.
package scale
