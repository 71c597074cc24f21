#!/usr/bin/env bash
# Builds OCM's own addons that let the hub's Argo CD read a spoke's live resources in the
# pull model, from source through the Go module proxy, into ./bin: cluster-proxy (its
# addon manager, its user server and service proxy, its addon agent, and the
# apiserver-network-proxy server and agent it pins) and managed-serviceaccount. Each is
# built in a throwaway module outside the product's go.mod whose go.mod and go.sum are the
# addon's own, so every dependency resolves exactly as the addon pins it. The checksum
# database lacks apiserver-network-proxy v0.33.0's go.mod, so that module is verified
# against the hash in cluster-proxy's go.sum alone (GONOSUMDB), which the copy keeps.
#
# usage: hack/build-ocm-addons.sh BIN_DIR
set -euo pipefail

CLUSTER_PROXY_VERSION="${CLUSTER_PROXY_VERSION:-v0.10.0}"
MANAGED_SERVICEACCOUNT_VERSION="${MANAGED_SERVICEACCOUNT_VERSION:-v0.9.0}"
bin_dir="$(mkdir -p "$1" && cd "$1" && pwd)"

log() { printf '[build-ocm-addons] %s\n' "$*" >&2; }

# build MODULE VERSION NAME=PACKAGE...: the packages of one module's build, in one go build,
# each into bin/NAME, skipped while every NAME is there at this version and this script.
build() {
  local module="$1" version="$2"
  shift 2
  local stamp cached=true name pkg
  stamp="$module@$version $(sha256sum "$0" | cut -c1-12)"
  for pair in "$@"; do
    name="${pair%%=*}"
    [[ -x "$bin_dir/$name" && -f "$bin_dir/$name.version" && "$(cat "$bin_dir/$name.version")" == "$stamp" ]] || cached=false
  done
  if $cached; then log "$module $version cached"; return; fi

  local work="$bin_dir/.build/${module##*/}-$version" out
  mkdir -p "$work"
  if [[ ! -f "$work/go.mod" ]]; then
    local dir
    dir="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
    sed "s#^module .*#module local/build-${module##*/}#" "$dir/go.mod" > "$work/go.mod"
    printf '\nrequire %s %s\n' "$module" "$version" >> "$work/go.mod"
    cp "$dir/go.sum" "$work/go.sum"
    chmod u+w "$work/go.mod" "$work/go.sum"
    (cd "$work" && GOFLAGS=-mod=mod go get "$module@$version" >&2)
  fi
  out="$work/out"
  rm -rf "$out" && mkdir -p "$out"
  local pkgs=()
  for pair in "$@"; do pkgs+=("${pair#*=}"); done
  log "building ${*%%=*} ($module $version) from source..."
  (cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out/" "${pkgs[@]}")
  for pair in "$@"; do
    name="${pair%%=*}"
    pkg="${pair#*=}"
    mv "$out/${pkg##*/}" "$bin_dir/$name"
    echo "$stamp" > "$bin_dir/$name.version"
  done
}

export GONOSUMDB=sigs.k8s.io/apiserver-network-proxy
build open-cluster-management.io/cluster-proxy "$CLUSTER_PROXY_VERSION" \
  cluster-proxy=open-cluster-management.io/cluster-proxy/cmd/cluster-proxy \
  cluster-proxy-addon-manager=open-cluster-management.io/cluster-proxy/cmd/addon-manager \
  cluster-proxy-addon-agent=open-cluster-management.io/cluster-proxy/cmd/addon-agent \
  anp-proxy-server=sigs.k8s.io/apiserver-network-proxy/cmd/server \
  anp-proxy-agent=sigs.k8s.io/apiserver-network-proxy/cmd/agent
build open-cluster-management.io/managed-serviceaccount "$MANAGED_SERVICEACCOUNT_VERSION" \
  managed-serviceaccount=open-cluster-management.io/managed-serviceaccount/cmd
log "built: cluster-proxy $CLUSTER_PROXY_VERSION, managed-serviceaccount $MANAGED_SERVICEACCOUNT_VERSION"
