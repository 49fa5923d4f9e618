# The image deploy/k8s/walks-job.yaml runs (make image builds it as
# handoffcheck:latest). Two stages: the Go toolchain builds a static
# binary, and the image keeps only that binary on a distroless base (no
# shell, no package manager, a non-root user). The Job's container gives
# only args, so this entrypoint is the command it runs;
# TestDeploy_ImageRunsTheManifestCommand holds the two together.
FROM golang:1.26 AS build
WORKDIR /src
# The module cache first, so that editing the code reuses the layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO off: the static base has no C library. -buildvcs=false: the build
# context carries no .git (see .dockerignore).
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -o /out/handoffcheck ./cmd/handoffcheck

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/handoffcheck /usr/local/bin/handoffcheck
ENTRYPOINT ["/usr/local/bin/handoffcheck"]
