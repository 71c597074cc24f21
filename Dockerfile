# syntax=docker/dockerfile:1
# The gitops-addon image: one static binary (manager, agent, render, doctor, version).
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
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
    -ldflags "-s -w -X github.com/gitops-addon/gitops-addon/pkg/version.Version=${VERSION} -X github.com/gitops-addon/gitops-addon/pkg/version.GitCommit=${GIT_COMMIT}" \
    -o /out/gitops-addon ./cmd/gitops-addon

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/gitops-addon /gitops-addon
USER 65532:65532
ENTRYPOINT ["/gitops-addon"]
