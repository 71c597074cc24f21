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
# from one process bound to 127.0.0.1 only. ocm's own webhook-server commands bind fixed
# health (:8000) and metrics (:8080) ports on every interface, so on one machine without
# pods only one of them could run, and not on loopback alone. This main builds the
# controller-runtime manager itself and calls each of ocm's webhooks' own Init.
mkdir -p "$work/cmd/webhooks"
cat > "$work/cmd/webhooks/main.go" <<'GO'
// Command webhooks runs ocm's registration, work and addon webhooks in one server on
// 127.0.0.1, with no health or metrics listener.
package main

import (
	"crypto/tls"
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ocmfeature "open-cluster-management.io/api/feature"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	addonv1alpha1 "open-cluster-management.io/ocm/pkg/addon/webhook/v1alpha1"
	addonv1beta1 "open-cluster-management.io/ocm/pkg/addon/webhook/v1beta1"
	"open-cluster-management.io/ocm/pkg/features"
	registrationv1 "open-cluster-management.io/ocm/pkg/registration/webhook/v1"
	registrationv1beta2 "open-cluster-management.io/ocm/pkg/registration/webhook/v1beta2"
	"open-cluster-management.io/ocm/pkg/work/webhook/common"
	workwebhookv1 "open-cluster-management.io/ocm/pkg/work/webhook/v1"
)

func main() {
	port := flag.Int("port", 9443, "port of the webhook server on 127.0.0.1")
	certDir := flag.String("certdir", "", "directory with tls.crt and tls.key")
	manifestLimit := flag.Int("manifest-limit", 500*1024, "max size of a ManifestWork's manifests")
	flag.Parse()
	ctrl.SetLogger(klog.NewKlogr())
	// The feature gates ocm's registration and work hub commands register (defaults).
	utilruntime.Must(features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubRegistrationFeatureGates))
	utilruntime.Must(features.HubMutableFeatureGate.Add(ocmfeature.DefaultHubWorkFeatureGates))
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, clusterv1.Install, registrationv1beta2.Install, workv1.Install,
		// ocm's addon webhook packages register their own conversion wrapper types.
		addonv1alpha1.Install, addonv1beta1.Install,
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	common.ManifestValidator.WithLimit(*manifestLimit)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: "127.0.0.1", Port: *port, CertDir: *certDir,
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }},
		}),
	})
	if err != nil {
		panic(err)
	}
	for _, w := range []interface{ Init(ctrl.Manager) error }{
		&registrationv1.ManagedClusterWebhook{}, &registrationv1beta2.ManagedClusterSetBindingWebhook{},
		&workwebhookv1.ManifestWorkWebhook{},
		&addonv1alpha1.ManagedClusterAddOnWebhook{}, &addonv1beta1.ManagedClusterAddOnWebhook{},
		&addonv1alpha1.ClusterManagementAddOnWebhook{}, &addonv1beta1.ClusterManagementAddOnWebhook{},
	} {
		if err := w.Init(mgr); err != nil {
			panic(err)
		}
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
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
