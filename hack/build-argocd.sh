#!/usr/bin/env bash
# Builds Argo CD (the all-in-one binary: application controller, repo-server,
# ApplicationSet controller, ... chosen by ARGOCD_BINARY_NAME) and the GitOps operator
# (argocd-operator) from source through the Go module proxy into ./bin, each in its own
# throwaway module outside the product's go.mod.
#
# Versions: Argo CD v3.2.11 is the newest release that builds from the proxy as upstream
# wrote it (v3.2.12 does not compile; v3.3+ replace gitops-engine with a folder their
# module zip lacks). argocd-operator v0.18.0 is the version whose ArgoCD CRD the agent
# chart ships (hack/crdgen), and it builds from the proxy.
#
# usage: hack/build-argocd.sh BIN_DIR [argocd] [argocd-operator]
set -euo pipefail

ARGOCD_VERSION="${ARGOCD_VERSION:-v3.2.11}"
ARGOCD_OPERATOR_VERSION="${ARGOCD_OPERATOR_VERSION:-v0.18.0}"
bin_dir="$(mkdir -p "$1" && cd "$1" && pwd)"
shift
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(argocd argocd-operator)

log() { printf '[build-argocd] %s\n' "$*" >&2; }

# cached NAME STAMP: the binary exists and was built from this stamp.
cached() { [[ -x "$bin_dir/$1" && -f "$bin_dir/$1.version" && "$(cat "$bin_dir/$1.version")" == "$2" ]]; }

# replace_block GOMOD: the replace directives of a go.mod (block and single-line), minus
# replacements by local folders, which a module zip does not carry.
replace_block() {
  awk '/^replace \($/{inblock=1; print; next} inblock{print; if ($0 ~ /^\)$/) inblock=0; next} /^replace /{print}' "$1" |
    grep -v '=> \./'
}

# throwaway_module DIR MODULE VERSION GO_VERSION: a module that requires MODULE@VERSION
# with MODULE's own replace directives, so that every dependency resolves as upstream pins it.
throwaway_module() {
  local dir="$1" module="$2" version="$3" go_version="$4" gomod
  [[ -f "$dir/go.mod" ]] && return 0
  mkdir -p "$dir"
  gomod="$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  {
    printf 'module local/build-%s\n\ngo %s\n\n' "$(basename "$dir")" "$go_version"
    replace_block "$gomod"
  } > "$dir/go.mod"
  (cd "$dir" && GOFLAGS=-mod=mod go get -tool "$module/cmd@$version" >&2)
}

build_argocd() {
  local stamp="$ARGOCD_VERSION $(sha256sum "$0" | cut -c1-12)"
  if cached argocd "$stamp"; then log "argocd $ARGOCD_VERSION cached"; return; fi
  local work="$bin_dir/.build/argocd-$ARGOCD_VERSION" start=$SECONDS
  log "building Argo CD $ARGOCD_VERSION from source (4 min with empty Go caches on a quiet 2-core machine; much longer under load)..."
  throwaway_module "$work" github.com/argoproj/argo-cd/v3 "$ARGOCD_VERSION" 1.25.5
  (cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "-s -w -X github.com/argoproj/argo-cd/v3/common.version=${ARGOCD_VERSION#v}" \
    -o "$bin_dir/argocd.tmp" github.com/argoproj/argo-cd/v3/cmd)
  mv "$bin_dir/argocd.tmp" "$bin_dir/argocd"
  echo "$stamp" > "$bin_dir/argocd.version"
  log "argocd: $(ARGOCD_BINARY_NAME=argocd "$bin_dir/argocd" version --client --short 2>/dev/null || echo built) in $((SECONDS - start)) s"
}

build_operator() {
  local stamp="$ARGOCD_OPERATOR_VERSION $(sha256sum "$0" | cut -c1-12)"
  if cached argocd-operator "$stamp"; then log "argocd-operator $ARGOCD_OPERATOR_VERSION cached"; return; fi
  local work="$bin_dir/.build/argocd-operator-$ARGOCD_OPERATOR_VERSION" start=$SECONDS
  log "building argocd-operator $ARGOCD_OPERATOR_VERSION from source (2 min with empty Go caches)..."
  throwaway_module "$work" github.com/argoproj-labs/argocd-operator "$ARGOCD_OPERATOR_VERSION" 1.25.9
  (cd "$work" && GOFLAGS=-mod=mod go mod tidy >&2)
  (cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "-s -w -X github.com/argoproj-labs/argocd-operator/version.Version=${ARGOCD_OPERATOR_VERSION#v}" \
    -o "$bin_dir/argocd-operator.tmp" github.com/argoproj-labs/argocd-operator/cmd)
  mv "$bin_dir/argocd-operator.tmp" "$bin_dir/argocd-operator"
  echo "$stamp" > "$bin_dir/argocd-operator.version"
  log "argocd-operator $ARGOCD_OPERATOR_VERSION built in $((SECONDS - start)) s"
}

for t in "${targets[@]}"; do
  case "$t" in
    argocd) build_argocd ;;
    argocd-operator) build_operator ;;
    *) log "unknown target $t (argocd, argocd-operator)"; exit 2 ;;
  esac
done
