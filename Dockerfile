# syntax=docker/dockerfile:1
# The gitops-addon image: one static binary (manager, agent, render, doctor, version), run
# as a non-root user. The build context is the allow-list in .dockerignore; test/image builds
# this file with buildah and fails when the builder stage lacks a file it compiles.
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=v0.0.0-dev
ARG GIT_COMMIT=unknown
WORKDIR /src
# Dependencies first, so that source changes reuse this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
COPY manifests/ manifests/
COPY charts/ charts/
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
    -ldflags "-s -w -X github.com/gitops-addon/gitops-addon/pkg/version.Version=${VERSION} -X github.com/gitops-addon/gitops-addon/pkg/version.GitCommit=${GIT_COMMIT}" \
    -o /out/gitops-addon ./cmd/gitops-addon

FROM gcr.io/distroless/static:nonroot
ARG VERSION=v0.0.0-dev
ARG GIT_COMMIT=unknown
LABEL org.opencontainers.image.title="gitops-addon" \
      org.opencontainers.image.description="Open Cluster Management addon that delivers and runs Argo CD on every managed cluster" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${GIT_COMMIT}"
COPY --from=builder /out/gitops-addon /gitops-addon
USER 65532:65532
ENTRYPOINT ["/gitops-addon"]
