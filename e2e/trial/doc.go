// Package trial tests the Docker-less trial end to end, through the same code
// and binary as `make trial`: `gpuvc dev trial up --local` on the local control
// plane with a real node, the report, the team kubeconfig files used with
// kubectl, and `gpuvc dev trial down` leaving nothing behind; and `gpuvc dev
// cluster up` with its real node making a team Ready. It needs root and
// takes a few minutes; it skips under -short.
package trial
