package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/pkg/spoke/crdinstall"
	"github.com/gitops-addon/gitops-addon/test/argocd"
	"github.com/gitops-addon/gitops-addon/test/harness"
	"github.com/gitops-addon/gitops-addon/test/install"
)

func printTable(ctx context.Context, out io.Writer, d *Demo) {
	f := d.Fleet
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tFLAVOUR\tADDON\tROUTE API\tROUTES CRD\tGUESTBOOK (HUB VIEW)\tLANDED ON THE SPOKE")
	for _, name := range Spokes {
		s := install.State(ctx, f.Hub, f.Spokes[name])
		routesCRD := "absent"
		if s.RoutesCRD {
			routesCRD = "installed"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Cluster, s.Flavour, s.Addon, s.RouteAPI, routesCRD,
			d.HubApplicationStatus(ctx, name), strings.Join(s.Landed, ", "))
	}
	_ = w.Flush()
}

func printHowToLookAround(w io.Writer, d *Demo) {
	f := d.Fleet
	hub := f.Hub.Kubeconfig
	vanilla, openshift := f.Spokes["vanilla"].Kubeconfig, f.Spokes["openshift"].Kubeconfig
	fmt.Fprintf(w, "\nKubeconfigs:\n  hub        %s\n", hub)
	for _, name := range Spokes {
		fmt.Fprintf(w, "  %-10s %s\n", name, f.Spokes[name].Kubeconfig)
	}
	fmt.Fprintf(w, "Git repository: %s\n", d.RepoURL)
	fmt.Fprintf(w, "Logs of every process: %s\n", filepath.Join(f.WorkDir, "logs"))
	if d.Server != nil {
		fmt.Fprintf(w, "The hub's Argo CD: %s (login admin / %s)", d.Server.URL, argocd.AdminPassword)
		if os.Getenv(EnvArgoCDWithUI) == "" {
			fmt.Fprintf(w, "; its API only: this Argo CD is built without its web UI (set %s)", EnvArgoCDWithUI)
		}
		fmt.Fprintf(w, "\n  resource tree: curl -s -H \"Authorization: Bearer $(curl -s %s/api/v1/session -d '{\"username\":\"admin\",\"password\":\"%s\"}' "+
			"| jq -r .token)\" %s/api/v1/applications/guestbook-vanilla/resource-tree | jq '.nodes[] | .kind + \" \" + .name'\n",
			d.Server.URL, argocd.AdminPassword, d.Server.URL)
	}
	fmt.Fprintln(w, "\nLook around:")
	fmt.Fprintf(w, "  kubectl --kubeconfig %s get gitopsclusters,applicationsets,applications -n openshift-gitops\n", hub)
	fmt.Fprintf(w, "  kubectl --kubeconfig %s get managedclusteraddons,manifestworks -A\n", hub)
	fmt.Fprintf(w, "  kubectl --kubeconfig %s get multiclusterapplicationsetreports -n openshift-gitops -o yaml\n", hub)
	for _, name := range Spokes {
		fmt.Fprintf(w, "  kubectl --kubeconfig %s get deploy,statefulsets,argocds,applications -n openshift-gitops\n", f.Spokes[name].Kubeconfig)
	}
	if d.Binary != "" {
		fmt.Fprintf(w, "  %s doctor --kubeconfig %s\n", d.Binary, openshift)
	} else {
		fmt.Fprintf(w, "  kubectl --kubeconfig %s get pods -A -o wide\n", openshift)
	}
	fmt.Fprintln(w, "\nTry this:")
	fmt.Fprintln(w, "  1. Drift: change the guestbook on a spoke; its Argo CD puts it back within seconds (self-heal), the hub stays Synced:")
	fmt.Fprintf(w, "     kubectl --kubeconfig %s -n guestbook patch configmap guestbook-ui --type merge -p '{\"data\":{\"color\":\"red\"}}'\n", vanilla)
	fmt.Fprintf(w, "     kubectl --kubeconfig %s -n guestbook get configmap guestbook-ui -o jsonpath='{.data.color}'\n", vanilla)
	fmt.Fprintln(w, "  2. A new commit: its revision reaches the hub's Applications (about 20 s):")
	fmt.Fprintf(w, "     cd %s && sed -i 's/color: blue/color: green/' guestbook/configmap.yaml && git commit -qam green && git push -q origin "+
		"main\n", d.Repo.WorkDir())
	fmt.Fprintf(w, "     kubectl --kubeconfig %s get applications -n openshift-gitops -o "+
		"custom-columns=NAME:.metadata.name,SYNC:.status.sync.status,REVISION:.status.sync.revision\n", hub)
	fmt.Fprintln(w, "  3. RBAC: an Application with a kind outside the spoke's allowlist fails with the forbidden error on the hub:")
	fmt.Fprintf(w, "     kubectl --kubeconfig %s -n openshift-gitops patch applicationset guestbook --type json -p "+
		"'[{\"op\":\"replace\",\"path\":\"/spec/template/spec/source/path\",\"value\":\"priority\"}]'\n", hub)
	fmt.Fprintf(w, "     kubectl --kubeconfig %s get applications -n openshift-gitops -o jsonpath='{range .items[*]}{.metadata.name}: "+
		"{.status.conditions[*].message}{\"\\n\"}{end}'\n", hub)
	fmt.Fprintln(w, "  4. The Routes trap: a duplicate Routes CRD on the OpenShift-like spoke is refused by the agent's admission policy:")
	fmt.Fprintf(w, "     kubectl --kubeconfig %s apply -f %s\n", openshift, writeRoutesCRD(f))
	fmt.Fprintln(w, "  5. Take a cluster out of the Placement: its Argo CD stays until it has pruned the guestbook Application, then the")
	fmt.Fprintln(w, "     GitOps stack leaves it; CRDs and its own Applications stay. Watch AddOnsReady say WaitingForApplications:")
	fmt.Fprintf(w, "     kubectl --kubeconfig %s label managedcluster vanilla gitops-\n", hub)
	fmt.Fprintf(w, "     kubectl --kubeconfig %s -n openshift-gitops get gitopscluster gitops-managed -o "+
		"jsonpath='{.status.conditions[?(@.type==\"AddOnsReady\")].message}{\"\\n\"}'\n", hub)
}

// writeRoutesCRD writes the Routes CRD the agent installs on vanilla clusters to the
// fleet's directory, for the Routes-trap exercise; "" if it cannot.
func writeRoutesCRD(f *harness.Fleet) string {
	embedded, err := crdinstall.Load()
	if err != nil {
		return ""
	}
	crd, err := embedded.Routes.Decode()
	if err != nil {
		return ""
	}
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	raw, err := yaml.Marshal(crd)
	if err != nil {
		return ""
	}
	file := filepath.Join(f.WorkDir, "routes-crd.yaml")
	if os.WriteFile(file, raw, 0o600) != nil {
		return ""
	}
	return file
}
