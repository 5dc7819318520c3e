# syntax=docker/dockerfile:1
#
# The gpuvc image: one binary for every role (manager, agent, reserve), non-root.
# Build: docker build -t ghcr.io/gpuvc/gpuvc:$(git describe --tags --always) \
#          --build-arg VERSION=$(git describe --tags --always) --build-arg COMMIT=$(git rev-parse --short HEAD) .
# go-nvml needs cgo, so the binary links glibc dynamically (libnvidia-ml.so.1 is only
# dlopen'd at run time, from the driver the NVIDIA container runtime injects). Build
# each architecture natively (or under emulation): cgo does not cross-compile here.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=1 \
    CGO_CFLAGS=-Wno-deprecated-declarations \
    GONOSUMDB=github.com/loft-sh/* \
    GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
# -z lazy: go-nvml resolves NVML symbols after dlopen; without it the binary refuses
# to start (see the Makefile's LAZY_BINDING).
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -o /out/gpuvc \
      -ldflags "-s -w -extldflags=-Wl,-z,lazy \
        -X github.com/gpuvc/gpuvc/cmd/gpuvc/commands/version.Version=${VERSION} \
        -X github.com/gpuvc/gpuvc/cmd/gpuvc/commands/version.Commit=${COMMIT}" \
      ./cmd/gpuvc

# glibc, CA certificates and a nonroot user (65532, as the chart runs it); no shell.
# Debian 12 on both sides, so the glibc the binary was linked against is present.
# The binary is on PATH: reservation pods run the command ["gpuvc", "reserve"]
# (share.DefaultCommand), the chart's containers only pass arguments.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/gpuvc /usr/local/bin/gpuvc
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/gpuvc"]
