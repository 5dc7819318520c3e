// Package gpuvcbin is the gpuvc binary as tests run it: built as the Makefile
// builds it, run as a user runs it, and `gpuvc manager` as its own process.
package gpuvcbin
