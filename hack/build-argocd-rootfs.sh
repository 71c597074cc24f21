#!/usr/bin/env bash
# Builds the root filesystem of the Argo CD image a real-pod fleet runs, into
# BIN_DIR/argocd-rootfs.tar: a minimal Debian (mmdebstrap, from the machine's own apt
# sources) with what Argo CD's components need beside their binary (git and gpg for the
# repo-server, redis-server for the operator's redis, ssh for git over ssh, a CA bundle),
# and the argocd binary `make argocd-env` built, laid out as the GitOps operator expects
# of an Argo CD image:
#   - /usr/local/bin/argocd, and each component's name linked to it (the binary picks its
#     role by the name it runs as);
#   - the scripts Argo CD's components are run through: uid_entrypoint.sh and
#     entrypoint.sh (by the operator), gpg-wrapper.sh and git-verify-wrapper.sh (by the
#     repo-server);
#   - the user argocd (999), home /home/argocd, as the image's user.
# Cached by the argocd binary and this script: a second run is a no-op.
#
# usage: hack/build-argocd-rootfs.sh BIN_DIR
set -euo pipefail
shopt -s inherit_errexit

bin_dir="$(cd "$1" && pwd)"
out="$bin_dir/argocd-rootfs.tar"
argocd="$bin_dir/argocd"
log() { printf '[build-argocd-rootfs] %s\n' "$*" >&2; }

[[ -x "$argocd" ]] || { log "$argocd is missing: run make argocd-env first"; exit 1; }
key="$(cat "$argocd.version" 2>/dev/null || true) $(sha256sum <"${BASH_SOURCE[0]}" | cut -c1-16) $(stat -c %s-%Y "$argocd")"
if [[ -f "$out" && "$(cat "$out.key" 2>/dev/null)" == "$key" ]]; then
  log "argocd-rootfs.tar cached"; exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  log "mmdebstrap needs root to build $out (it runs as root in CI)"; exit 1
fi
# shellcheck source=/dev/null
suite="$(. /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}")"
components=(argocd-server argocd-repo-server argocd-application-controller argocd-applicationset-controller
  argocd-cmp-server argocd-notifications argocd-commit-server argocd-dex argocd-k8s-auth argocd-git-ask-pass)

log "building a Debian $suite root filesystem with Argo CD (about a minute)..."
started=$SECONDS
# What goes into /usr/local/bin: the binary, a link per component, and the scripts Argo
# CD's components are run through, each running its arguments (or a program with them).
files="$(mktemp -d)"
trap 'rm -rf "$files"' EXIT
install -m 0755 "$argocd" "$files/argocd"
for c in "${components[@]}"; do ln -s argocd "$files/$c"; done
script() { # NAME WHY PROGRAM...
  printf '#!/bin/sh\n# %s.\nexec %s "$@"\n' "$2" "${*:3}" >"$files/$1" && chmod 0755 "$files/$1"
}
script uid_entrypoint.sh "The operator starts the repo-server through it; the image has its user"
script entrypoint.sh "The operator starts the ApplicationSet controller through it"
script gpg-wrapper.sh "The repo-server runs gpg through it" gpg
script git-verify-wrapper.sh "The repo-server verifies commit signatures through it" git
# The hooks' $1 is mmdebstrap's, the root being built.
# shellcheck disable=SC2016
(cd "$files" && mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
  --include=git,gnupg,openssh-client,redis-server,ca-certificates \
  --customize-hook='chroot "$1" groupadd --gid 999 argocd' \
  --customize-hook='chroot "$1" useradd --uid 999 --gid 999 --create-home --home-dir /home/argocd --shell /bin/sh argocd 2>/dev/null' \
  --customize-hook="copy-in $(echo *) /usr/local/bin" \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/*' \
  "$suite" "$out.tmp" >&2)
mv "$out.tmp" "$out"
printf '%s' "$key" >"$out.key"
log "argocd-rootfs.tar: $(du -m "$out" | cut -f1) MB in $((SECONDS - started)) s"
