#!/usr/bin/env bash
# Builds Argo CD (ARGOCD_VERSION) with its web UI into ./bin/argocd-ui, for the browser
# tests and make demo. An Argo CD built by `go build` alone (bin/argocd) has no UI:
# argocd-server serves index.html only from the UI embedded at build time (ui/dist/app).
# So this builds the UI as Argo CD's own build does, from the Argo CD module's ui/ folder
# and its lock file (yarn 1.22 from the npm registry, `yarn install --frozen-lockfile`,
# `yarn build`), then builds the binary as hack/build-argocd.sh does, in a module that
# replaces Argo CD's by that copy with its UI filled in.
#
# The lock file takes argo-ui from GitHub at a pinned commit, and nothing else serves that
# commit: not the npm registry (argo-ui@1.0.0 there is a 2021 snapshot without the v2/
# components the UI imports), not the Go module proxy. Where GitHub is not reachable, name a
# clone (or a mirror) of https://github.com/argoproj/argo-ui that has the commit:
# ARGO_UI_GIT=/path/to/argo-ui. Without either it says so and exits with 3, having built
# nothing (make test and make demo then go on without the UI). It installs nodejs, npm and
# chromium (Debian) when missing: the build needs the first two, the browser tests the third;
# not root and without them, it says so and exits with 3 too.
#
# usage: hack/build-argocd-ui.sh BIN_DIR
set -euo pipefail

ARGOCD_VERSION="${ARGOCD_VERSION:-v3.2.11}"
YARN_VERSION=1.22.22
ARGO_UI_URL=https://github.com/argoproj/argo-ui.git
bin_dir="$(mkdir -p "$1" && cd "$1" && pwd)"
work="$bin_dir/.build/argocd-ui-$ARGOCD_VERSION"
log() { printf '[build-argocd-ui] %s\n' "$*" >&2; }

stamp="$ARGOCD_VERSION $(sha256sum "$0" | cut -c1-12)"
if [[ -x "$bin_dir/argocd-ui" && -f "$bin_dir/argocd-ui.version" && "$(cat "$bin_dir/argocd-ui.version")" == "$stamp" ]]; then
  log "argocd-ui $ARGOCD_VERSION cached"
  exit 0
fi
# One of another version or build would run where this one is asked for: gone, whatever follows.
rm -f "$bin_dir/argocd-ui" "$bin_dir/argocd-ui.version"
# The Go build takes the throwaway module of hack/build-argocd.sh (make argocd-env), whose
# go.mod pins every dependency as upstream does.
argocd_module="$bin_dir/.build/argocd-$ARGOCD_VERSION"
[[ -f "$argocd_module/go.mod" ]] || { log "run make argocd-env first: $argocd_module/go.mod is missing"; exit 2; }

source_dir="$(cd "$argocd_module" && GOFLAGS=-mod=mod go mod download -json "github.com/argoproj/argo-cd/v3@$ARGOCD_VERSION" |
  sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
commit="$(sed -n 's|.*resolved "git+https://github.com/argoproj/argo-ui.git#\([0-9a-f]\{40\}\)".*|\1|p' "$source_dir/ui/yarn.lock")"
[[ -n "$commit" ]] || { log "Argo CD $ARGOCD_VERSION's ui/yarn.lock pins no argo-ui commit: this script needs a look"; exit 2; }

# Where argo-ui@commit comes from: the clone given, or GitHub.
if [[ -n "${ARGO_UI_GIT:-}" ]]; then
  git -C "$ARGO_UI_GIT" cat-file -e "$commit^{commit}" 2>/dev/null ||
    { log "ARGO_UI_GIT=$ARGO_UI_GIT has no commit $commit (Argo CD $ARGOCD_VERSION's argo-ui): fetch it there first"; exit 2; }
  # yarn clones argo-ui with git; git reads this configuration from the environment.
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="url.file://$(cd "$ARGO_UI_GIT" && pwd).insteadOf" GIT_CONFIG_VALUE_0="$ARGO_UI_URL"
  log "argo-ui $commit from $ARGO_UI_GIT"
elif ! timeout 30 git ls-remote "$ARGO_UI_URL" HEAD >/dev/null 2>&1; then
  log "GitHub is not reachable, and Argo CD $ARGOCD_VERSION's UI needs argo-ui at commit $commit from it"
  log "(not served by the npm registry nor the Go module proxy). Clone $ARGO_UI_URL where GitHub is"
  log "reachable, bring the clone here and run again with ARGO_UI_GIT=/path/to/argo-ui. Nothing was built."
  exit 3
fi

# node and npm build the UI; the browser tests drive Chromium.
"$(dirname "$0")/ensure-debian-packages.sh" node=nodejs npm=npm chromium=chromium ||
  { log "nodejs, npm and chromium are needed (apt-get install nodejs npm chromium, or run this as root). Nothing was built."; exit 3; }

start=$SECONDS
rm -rf "$work"
mkdir -p "$work"
cp -r "$source_dir" "$work/argo-cd"
chmod -R u+w "$work/argo-cd"
log "building Argo CD $ARGOCD_VERSION's UI (yarn $YARN_VERSION; 3 min on a 2-core machine with an empty yarn cache)..."
# The yarn cache is ./bin's, like every other build's cache-worthy output.
export YARN_CACHE_FOLDER="$bin_dir/.build/yarn-cache"
(cd "$work/argo-cd/ui" &&
  npx --yes "yarn@$YARN_VERSION" install --frozen-lockfile --non-interactive --network-timeout 600000 >&2 &&
  NODE_ENV=production NODE_OPTIONS=--max_old_space_size=4096 npx --yes "yarn@$YARN_VERSION" build >&2)
[[ -f "$work/argo-cd/ui/dist/app/index.html" ]] || { log "the UI build made no ui/dist/app/index.html"; exit 1; }
log "UI built in $((SECONDS - start)) s: $(find "$work/argo-cd/ui/dist/app" -type f | wc -l) files"

mkdir -p "$work/module"
cp "$argocd_module/go.mod" "$argocd_module/go.sum" "$work/module/"
printf '\nreplace github.com/argoproj/argo-cd/v3 => %s\n' "$work/argo-cd" >> "$work/module/go.mod"
(cd "$work/module" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
  -ldflags "-s -w -X github.com/argoproj/argo-cd/v3/common.version=${ARGOCD_VERSION#v}" \
  -o "$bin_dir/argocd-ui.tmp" github.com/argoproj/argo-cd/v3/cmd)
mv "$bin_dir/argocd-ui.tmp" "$bin_dir/argocd-ui"
echo "$stamp" > "$bin_dir/argocd-ui.version"
# The copy and node_modules (about 1 GB) are not needed once the UI is in the binary.
rm -rf "$work"
log "argocd-ui (Argo CD $ARGOCD_VERSION with its web UI) built in $((SECONDS - start)) s"
