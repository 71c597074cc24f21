#!/usr/bin/env bash
# Builds Kubernetes control-plane binaries and etcd from source through the Go module
# proxy into ./bin, each in a throwaway module outside the product's go.mod so the
# product's dependency graph stays clean. Binaries are cached: a second run is a no-op.
#
# usage: hack/build-k8s.sh BIN_DIR component...   (components: kube-apiserver
#        kube-controller-manager etcd, and for nodes that run real pods kubelet
#        kube-scheduler kube-proxy; NAME@vX.Y.Z builds another Kubernetes version
#        into BIN_DIR/NAME-vX.Y.Z, e.g. kube-apiserver@v1.29.6 for the oldest supported)
set -euo pipefail
# A failure inside $(...) stops the script too (a failed go mod tidy, say).
shopt -s inherit_errexit

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
bin_dir="$(mkdir -p "$1" && cd "$1" && pwd)"
shift

work="$bin_dir/.build"
mkdir -p "$work"

log() { printf '[build-k8s] %s\n' "$*" >&2; }

# kube_module writes, for one Kubernetes version, a module that requires k8s.io/kubernetes
# and replaces every staging module (as listed in kubernetes' own go.mod replace block) by
# its published v0.x.y twin, because the main module's ./staging paths do not exist outside
# the kubernetes repository. The build (-mod=mod, -tags providerless) resolves only what the
# commands it builds compile: `go mod tidy` would also want the in-tree cloud providers of
# older releases, whose staging modules the proxy does not serve
# (k8s.io/legacy-cloud-providers v0.29.6).
kube_module() {
  local version="$1" dir="$work/kubernetes-$1"
  local staging_version="v0${version#v1}"   # v1.35.4 -> v0.35.4
  if [[ -f "$dir/go.mod" ]]; then echo "$dir"; return; fi
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  local gomod
  gomod="$(cd "$dir.tmp" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  {
    echo "module local/build-kubernetes"
    echo
    echo "go 1.25"
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    echo "replace ("
    awk '/^replace \(/{inblk=1; next} inblk && /^\)/{inblk=0} inblk && $1 ~ /^k8s.io\// && $2 == "=>" {print $1}' "$gomod" |
      sort -u | while read -r m; do echo "	$m => $m $staging_version"; done
    echo ")"
  } > "$dir.tmp/go.mod"
  mv "$dir.tmp" "$dir"
  echo "$dir"
}

# kube_binary is where a command of a version goes: KUBE_VERSION's as bin/NAME, any
# other as bin/NAME-vX.Y.Z.
kube_binary() {
  if [[ "$1" == "$KUBE_VERSION" ]]; then echo "$bin_dir/$2"; else echo "$bin_dir/$2-$1"; fi
}

# build_kube builds the named commands of one Kubernetes version in one `go build`, so
# the packages they share are compiled once and their links run beside the compiles.
build_kube() {
  local version="$1" name out todo=()
  shift
  for name in "$@"; do
    out="$(kube_binary "$version" "$name")"
    if [[ -x "$out" ]] && "$out" --version 2>/dev/null | grep -q "$version\$"; then
      log "$name $version cached"
    else
      todo+=("$name")
    fi
  done
  [[ ${#todo[@]} -gt 0 ]] || return 0
  local dir; dir="$(kube_module "$version")"
  local kube_minor; kube_minor="$(echo "$version" | cut -d. -f2)"
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$kube_minor"
  local staging="$work/out-$version" started=$SECONDS
  rm -rf "$staging" && mkdir -p "$staging"
  log "building ${todo[*]} $version from source in one go build (several minutes on 2 cores)..."
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -tags providerless -trimpath -ldflags "$ldflags" \
    -o "$staging/" "${todo[@]/#/k8s.io/kubernetes/cmd/}")
  for name in "${todo[@]}"; do
    mv "$staging/$name" "$(kube_binary "$version" "$name")"
  done
  rmdir "$staging"
  log "${todo[*]}: $("$(kube_binary "$version" "${todo[0]}")" --version) in $((SECONDS - started)) s"
}

build_etcd() {
  local out="$bin_dir/etcd"
  if [[ -x "$out" ]] && "$out" --version 2>/dev/null | grep -q "etcd Version: ${ETCD_VERSION#v}"; then
    log "etcd $ETCD_VERSION cached"; return
  fi
  local dir="$work/etcd-$ETCD_VERSION"
  mkdir -p "$dir"
  if [[ ! -f "$dir/go.sum" ]]; then
    # The require and the importing file come first: otherwise tidy picks the newest etcd.
    printf 'module local/build-etcd\n\ngo 1.25\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > "$dir/go.mod"
    printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > "$dir/tools.go"
    (cd "$dir" && go mod tidy >&2)
  fi
  log "building etcd $ETCD_VERSION from source..."
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" go.etcd.io/etcd/server/v3)
  mv "$out.tmp" "$out"
  log "etcd: $("$out" --version | head -1)"
}

# Group the commands by version, in the order given, so each version is one go build.
declare -A commands_of=()
versions=()
build_etcd_too=false
for c in "$@"; do
  case "$c" in
    etcd) build_etcd_too=true; continue ;;
    kube-apiserver|kube-controller-manager|kubelet|kube-scheduler|kube-proxy) name="$c" version="$KUBE_VERSION" ;;
    kube-apiserver@v*|kube-controller-manager@v*|kubelet@v*|kube-scheduler@v*|kube-proxy@v*) name="${c%@*}" version="${c#*@}" ;;
    *) echo "unknown component $c" >&2; exit 2 ;;
  esac
  [[ -v "commands_of[$version]" ]] || versions+=("$version")
  commands_of[$version]+=" $name"
done
if $build_etcd_too; then build_etcd; fi
for version in "${versions[@]}"; do
  # shellcheck disable=SC2086 # the names are words
  build_kube "$version" ${commands_of[$version]}
done
