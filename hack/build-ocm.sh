#!/usr/bin/env bash
# Builds the Open Cluster Management components from source through the Go module proxy
# into ./bin, in a throwaway module outside the product's go.mod. ocm's own go.sum is
# copied in: the checksum database lacks some of its dependencies (sigs.k8s.io/about-api).
#
# usage: hack/build-ocm.sh BIN_DIR
set -euo pipefail

OCM_VERSION="${OCM_VERSION:-v1.2.1}"
bin_dir="$(mkdir -p "$1" && cd "$1" && pwd)"
work="$bin_dir/.build/ocm-$OCM_VERSION"
components=(registration work placement addon webhooks)

log() { printf '[build-ocm] %s\n' "$*" >&2; }

# The stamp changes with the version and with this script (which writes ocm-webhooks).
stamp="$OCM_VERSION $(sha256sum "$0" | cut -c1-12)"
cached=true
for c in "${components[@]}"; do
  [[ -x "$bin_dir/ocm-$c" && -f "$bin_dir/ocm-$c.version" && "$(cat "$bin_dir/ocm-$c.version")" == "$stamp" ]] || cached=false
done
if $cached; then log "ocm $OCM_VERSION cached"; exit 0; fi

mkdir -p "$work"
if [[ ! -f "$work/go.mod" ]]; then
  ocm_dir="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "open-cluster-management.io/ocm@$OCM_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
  # The throwaway module is ocm's own go.mod under another name, so every dependency
  # resolves exactly as ocm pins it, plus a requirement on ocm itself.
  sed "s#^module .*#module local/build-ocm#" "$ocm_dir/go.mod" > "$work/go.mod"
  printf '\nrequire open-cluster-management.io/ocm %s\n' "$OCM_VERSION" >> "$work/go.mod"
  cp "$ocm_dir/go.sum" "$work/go.sum"
  chmod u+w "$work/go.mod" "$work/go.sum"
  (cd "$work" && GOFLAGS=-mod=mod go mod download open-cluster-management.io/ocm >&2)
  (cd "$work" && GOFLAGS=-mod=mod go get "open-cluster-management.io/ocm@$OCM_VERSION" >&2)
fi
# ocm-webhooks serves the registration, work and addon-conversion webhooks of the hub
# from one process. Each of ocm's own webhook-server commands binds a fixed health port
# (:8000), so on one machine without pods only one of them could run.
mkdir -p "$work/cmd/webhooks"
cat > "$work/cmd/webhooks/main.go" <<'GO'
// Command webhooks runs ocm's registration, work and addon webhooks in one server.
package main

import (
	"os"

	"github.com/spf13/pflag"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	ocmfeature "open-cluster-management.io/api/feature"
	ctrl "sigs.k8s.io/controller-runtime"

	addonwebhook "open-cluster-management.io/ocm/pkg/addon/webhook"
	commonoptions "open-cluster-management.io/ocm/pkg/common/options"
	"open-cluster-management.io/ocm/pkg/features"
	registrationwebhook "open-cluster-management.io/ocm/pkg/registration/webhook"
	workwebhook "open-cluster-management.io/ocm/pkg/work/webhook"
)

func main() {
	// The feature gates the registration and work hub commands register.
	utilruntime.Must(features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubRegistrationFeatureGates))
	utilruntime.Must(features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubWorkFeatureGates))
	options := commonoptions.NewWebhookOptions()
	work := workwebhook.NewOptions()
	flags := pflag.NewFlagSet("ocm-webhooks", pflag.ExitOnError)
	options.AddFlags(flags)
	work.AddFlags(flags)
	_ = flags.Parse(os.Args[1:])
	for _, setup := range []func(*commonoptions.WebhookOptions) error{
		registrationwebhook.SetupWebhookServer, work.SetupWebhookServer, addonwebhook.SetupWebhookServer,
	} {
		if err := setup(options); err != nil {
			panic(err)
		}
	}
	if err := options.RunWebhookServer(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
GO
for c in "${components[@]}"; do
  log "building ocm $c $OCM_VERSION from source..."
  pkg="open-cluster-management.io/ocm/cmd/$c"
  [[ "$c" == webhooks ]] && pkg="./cmd/webhooks"
  (cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$bin_dir/ocm-$c.tmp" "$pkg")
  mv "$bin_dir/ocm-$c.tmp" "$bin_dir/ocm-$c"
  echo "$stamp" > "$bin_dir/ocm-$c.version"
done
log "ocm $OCM_VERSION built: ${components[*]}"
