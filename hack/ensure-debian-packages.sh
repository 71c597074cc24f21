#!/usr/bin/env bash
# Installs Debian packages the local fleet runs (redis-server for Argo CD, git for its
# repo-server), when a command they provide is missing. CI runs on a fresh machine as root.
#
# usage: hack/ensure-debian-packages.sh COMMAND=PACKAGE...   e.g. redis-server=redis-server git=git
#        (COMMAND may be an absolute path, for a package whose programs are not on PATH)
set -euo pipefail

log() { printf '[debian] %s\n' "$*" >&2; }

missing=()
for pair in "$@"; do
  cmd="${pair%%=*}" pkg="${pair#*=}"
  if ! command -v "$cmd" >/dev/null 2>&1 && [[ " ${missing[*]} " != *" $pkg "* ]]; then missing+=("$pkg"); fi
done
if [[ ${#missing[@]} -eq 0 ]]; then exit 0; fi

if [[ $(id -u) -ne 0 ]]; then
  log "missing: ${missing[*]}; install them (apt-get install ${missing[*]}) or run this as root"
  exit 1
fi
# make -j runs several of these side by side; apt-get takes one at a time.
exec 9>/run/gitops-addon-apt.lock
flock 9
# Another one may have installed them while this one waited.
still_missing=()
for pkg in "${missing[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || still_missing+=("$pkg")
done
if [[ ${#still_missing[@]} -eq 0 ]]; then exit 0; fi
missing=("${still_missing[@]}")
log "installing ${missing[*]} from Debian's packages..."
export DEBIAN_FRONTEND=noninteractive
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$out" 2>&1; then
  tail -20 "$out" >&2
  log "apt-get failed installing ${missing[*]}"
  exit 1
fi
for pair in "$@"; do
  cmd="${pair%%=*}"
  command -v "$cmd" >/dev/null 2>&1 || { log "$cmd still missing after installing ${missing[*]}"; exit 1; }
done
log "installed ${missing[*]}"
