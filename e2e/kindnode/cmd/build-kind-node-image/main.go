// Command build-kind-node-image builds kind's node image offline (e2e/kindnode),
// loads it into the Docker engine DOCKER_HOST names and prints its reference:
//
//	GPUVC_KIND_NODE_IMAGE=$(go run ./e2e/kindnode/cmd/build-kind-node-image)
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gpuvc/gpuvc/e2e/kindnode"
)

func main() {
	ref, err := kindnode.Build(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-kind-node-image:", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}
