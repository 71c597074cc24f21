#!/usr/bin/env bash
# Builds a small CoreDNS from source through the Go module proxy into ./bin/coredns: only
# the plugins a local fleet's nodes need to resolve Services by name (bind, errors, log,
# health, ready, cache, kubernetes), in a throwaway module outside the product's go.mod.
# Cached: a second run is a no-op.
#
# usage: hack/build-coredns.sh BIN_DIR
set -euo pipefail
shopt -s inherit_errexit

COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
bin_dir="$(mkdir -p "$1" && cd "$1" && pwd)"
out="$bin_dir/coredns"
log() { printf '[build-coredns] %s\n' "$*" >&2; }

if [[ -x "$out" ]] && "$out" -version 2>/dev/null | grep -q "CoreDNS-${COREDNS_VERSION#v}"; then
  log "coredns $COREDNS_VERSION cached"; exit 0
fi
dir="$bin_dir/.build/coredns-$COREDNS_VERSION"
if [[ ! -f "$dir/go.sum" ]]; then
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  printf 'module local/build-coredns\n\ngo 1.25\n\nrequire github.com/coredns/coredns %s\n' "$COREDNS_VERSION" > "$dir.tmp/go.mod"
  cat > "$dir.tmp/main.go" <<'GO'
// A CoreDNS with only the plugins a local node needs, in the order CoreDNS runs them.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	"github.com/coredns/coredns/coremain"
)

func init() {
	dnsserver.Directives = []string{"bind", "health", "ready", "errors", "log", "cache", "kubernetes"}
}

func main() { coremain.Run() }
GO
  (cd "$dir.tmp" && go mod tidy >&2)
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
fi
log "building coredns $COREDNS_VERSION from source (about 4 minutes with empty Go caches)..."
started=$SECONDS
(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" .)
mv "$out.tmp" "$out"
log "coredns: $("$out" -version | head -1) in $((SECONDS - started)) s"
