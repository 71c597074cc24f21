package preflight

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// Severity is how a finding bears on the move.
type Severity int

const (
	// OK: as the checklist expects.
	OK Severity = iota
	// Note: the move handles it, or it is worth writing down to compare after the move.
	Note
	// Warning: look before going on; the move may not do all the page says.
	Warning
	// Blocker: do what the finding says first.
	Blocker
)

var severityWords = map[Severity]string{OK: "ok", Note: "note", Warning: "WARNING", Blocker: "BLOCKER"}

func (s Severity) String() string { return severityWords[s] }

// Finding is the result of one check of docs/migrating-from-acm.md's pre-flight checklist.
type Finding struct {
	// Check is the check's number on the page.
	Check    int
	Title    string
	Severity Severity
	// Message says what was found and, unless OK, what to do.
	Message string
}

// The ACM releases docs/migrating-from-acm.md was written from (their public sources).
const (
	ACMOldestCovered = "2.9"
	ACMNewestCovered = "2.16"
)

// Assess turns the facts into one finding per check, in the page's order.
func Assess(f *Facts) []Finding {
	return []Finding{
		acmRelease(f), appLifecycle(f), appLifecycleObjects(f), acmAddon(f), crds(f),
		argoNamespaces(f), clusterSecrets(f), managedClusters(f), pulledApplications(f),
	}
}

func acmRelease(f *Facts) Finding {
	r := Finding{Check: 1, Title: "ACM release and OCM's addon API"}
	if !f.AddonV1beta1Served {
		r.Severity = Blocker
		r.Message = "the hub serves no addon.open-cluster-management.io/v1beta1 (it arrived with OCM v1.2: ACM 2.16, MCE 2.11): " +
			"gitops-addon's manager does not run here; upgrade the hub first (ACM 2.16, MCE 2.11 or OCM v1.2 and later: docs/operations/compatibility.md)"
		return r
	}
	switch {
	case !f.MultiClusterHubServed || len(f.MultiClusterHubs) == 0:
		r.Message = "no MultiClusterHub: not a Red Hat ACM hub; checks 2 and 3 do not apply"
	case len(f.MultiClusterHubs) > 1:
		r.Severity = Warning
		r.Message = fmt.Sprintf("%d MultiClusterHubs (%s): ACM runs one per hub; check which is in charge", len(f.MultiClusterHubs), mchNames(f))
	default:
		m := f.MultiClusterHubs[0]
		r.Message = fmt.Sprintf("MultiClusterHub %s/%s, ACM %s", m.Namespace, m.Name, orUnknown(m.Version))
		if !covered(m.Version) {
			r.Severity = Warning
			r.Message += fmt.Sprintf(": the page covers ACM %s to %s; compare this release's sources with it before going on", ACMOldestCovered, ACMNewestCovered)
		}
	}
	return r
}

// covered says whether an ACM version (2.16.1, or v2.16.1) is one the page covers.
func covered(version string) bool {
	v := "v" + strings.TrimPrefix(version, "v")
	if !semver.IsValid(v) {
		return false
	}
	minor := semver.MajorMinor(v)
	return semver.Compare(minor, "v"+ACMOldestCovered) >= 0 && semver.Compare(minor, "v"+ACMNewestCovered) <= 0
}

func appLifecycle(f *Facts) Finding {
	r := Finding{Check: 2, Title: "app-lifecycle (ACM's GitOps controllers)"}
	if len(f.MultiClusterHubs) != 1 {
		r.Message = "no single MultiClusterHub to read: nothing to turn off"
		return r
	}
	m := f.MultiClusterHubs[0]
	if m.AppLifecycle != nil && !*m.AppLifecycle {
		r.Severity = Note
		r.Message = "off: step 1 of Moving over is done; check its Deployments (and ClusterManagementAddOn gitops-addon) are gone"
		return r
	}
	r.Severity = Note
	r.Message = fmt.Sprintf("on: step 1 of Moving over turns it off (kubectl patch multiclusterhub %s -n %s, as the page shows)", m.Name, m.Namespace)
	return r
}

func appLifecycleObjects(f *Facts) Finding {
	r := Finding{Check: 3, Title: "nothing else needs app-lifecycle"}
	var found []string
	for _, kind := range slices.Sorted(maps.Keys(f.AppLifecycleObjects)) {
		if n := f.AppLifecycleObjects[kind]; n > 0 {
			found = append(found, fmt.Sprintf("%d %s(s)", n, kind))
		}
	}
	if len(found) == 0 {
		r.Message = "no Subscriptions, Channels or PlacementRules"
		return r
	}
	r.Severity = Blocker
	r.Message = strings.Join(found, ", ") + ": they stop being reconciled when app-lifecycle is turned off (Policies may use " +
		"PlacementRules); move them first, or stay on ACM"
	return r
}

func acmAddon(f *Facts) Finding {
	r := Finding{Check: 4, Title: "ACM's gitops-addon delivers nothing"}
	switch {
	case !f.ACMAddon && len(f.AddonClusters) == 0:
		r.Message = "no ClusterManagementAddOn or ManagedClusterAddOn gitops-addon of ACM's"
	case !f.ACMAddon:
		r.Message = fmt.Sprintf("gitops-addon's own addon runs on %d cluster(s): already moved", len(f.AddonClusters))
	case len(f.AddonClusters) == 0:
		r.Severity = Note
		r.Message = "ACM's ClusterManagementAddOn gitops-addon exists, on no cluster: step 1 removes it, and helm install refuses until then"
	default:
		r.Severity = Blocker
		r.Message = fmt.Sprintf("ACM's gitops-addon runs on %d cluster(s) (%s): turning app-lifecycle off would remove it and run ACM's "+
			"cleanup on them; follow \"Hub-only beside ACM's gitops-addon\" instead", len(f.AddonClusters), strings.Join(firstOf(f.AddonClusters), ", "))
	}
	return r
}

func crds(f *Facts) Finding {
	r := Finding{Check: 5, Title: "the GitOpsCluster and report CRDs"}
	var parts []string
	for _, crd := range f.CRDs {
		switch {
		case !crd.Exists:
			parts = append(parts, crd.Name+" absent (the chart installs it)")
		case crd.Installer == "":
			parts = append(parts, crd.Name+" gitops-addon's")
		default:
			parts = append(parts, fmt.Sprintf("%s installed by %s: left as it is", crd.Name, crd.Installer))
		}
		if crd.Exists && crd.Name == CRDGitOpsClusters && !crd.GitOpsAddonField {
			r.Severity = Warning
			parts = append(parts, "its schema has no spec.gitopsAddon (ACM 2.14 or earlier's): gitops-addon cannot deliver "+
				"its addon on this hub, only its hub side (docs/migrating-from-acm.md, ACM's CRDs)")
		}
	}
	r.Message = strings.Join(parts, "; ")
	return r
}

func argoNamespaces(f *Facts) Finding {
	r := Finding{Check: 6, Title: "Argo CD namespaces of the GitOpsClusters"}
	if len(f.GitOpsClusters) == 0 {
		r.Message = "no GitOpsCluster"
		return r
	}
	namespaces := slices.Compact(slices.Sorted(maps.Values(f.GitOpsClusters)))
	r.Severity = Note
	r.Message = fmt.Sprintf("%d GitOpsCluster(s) register in %s: install with --set 'argoNamespaces={%s}'",
		len(f.GitOpsClusters), strings.Join(namespaces, ", "), strings.Join(namespaces, ","))
	return r
}

func clusterSecrets(f *Facts) Finding {
	r := Finding{Check: 7, Title: "one Argo CD cluster Secret per cluster"}
	var doubled []string
	for _, cluster := range slices.Sorted(maps.Keys(f.ClusterSecrets)) {
		if secrets := f.ClusterSecrets[cluster]; len(secrets) > 1 {
			slices.Sort(secrets)
			doubled = append(doubled, fmt.Sprintf("%s (%s)", cluster, strings.Join(secrets, ", ")))
		}
	}
	if len(doubled) == 0 {
		r.Message = fmt.Sprintf("%d cluster(s), one Secret each", len(f.ClusterSecrets))
		return r
	}
	r.Severity = Note
	r.Message = fmt.Sprintf("%d cluster(s) with two Secrets: %s; with the adopt annotation gitops-addon keeps one and removes the other "+
		"(DuplicateRemoved Event): note which, to compare after the move", len(doubled), strings.Join(firstOf(doubled), "; "))
	return r
}

func managedClusters(f *Facts) Finding {
	r := Finding{Check: 8, Title: "managed clusters joined and available"}
	var down []string
	for _, c := range f.ManagedClusters {
		if !c.Joined || !c.Available {
			down = append(down, c.Name)
		}
	}
	slices.Sort(down)
	if len(down) == 0 {
		r.Message = fmt.Sprintf("%d cluster(s), all joined and available", len(f.ManagedClusters))
		return r
	}
	r.Severity = Warning
	r.Message = fmt.Sprintf("%d of %d not joined or not available (%s): each keeps ACM's ManifestWorks until it is, and blocks "+
		"gitops-addon uninstall on the way back", len(down), len(f.ManagedClusters), strings.Join(firstOf(down), ", "))
	return r
}

func pulledApplications(f *Facts) Finding {
	r := Finding{Check: 9, Title: "pulled Applications and their ManifestWorks"}
	var several []string
	for _, app := range slices.Sorted(maps.Keys(f.PullWorks)) {
		if len(f.PullWorks[app]) > 1 {
			several = append(several, app)
		}
	}
	r.Message = fmt.Sprintf("%d pulled Application(s), %d with a ManifestWork", len(f.PulledApplications), len(f.PullWorks))
	if len(several) > 0 {
		r.Severity = Note
		r.Message += fmt.Sprintf("; %d with more than one (%s): gitops-addon retires each once its own is applied; keep the list to "+
			"compare after the move", len(several), strings.Join(firstOf(several), ", "))
	}
	return r
}

// firstOf keeps a report readable on a hub of a thousand clusters.
func firstOf(names []string) []string {
	const shown = 5
	if len(names) <= shown {
		return names
	}
	return append(slices.Clone(names[:shown]), fmt.Sprintf("and %d more", len(names)-shown))
}

func mchNames(f *Facts) string {
	var names []string
	for _, m := range f.MultiClusterHubs {
		names = append(names, m.Namespace+"/"+m.Name)
	}
	return strings.Join(names, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "(no status.currentVersion yet)"
	}
	return s
}

// Worst is the most severe of the findings.
func Worst(findings []Finding) Severity {
	worst := OK
	for _, f := range findings {
		worst = max(worst, f.Severity)
	}
	return worst
}

// Write writes the findings, one per check, and the verdict.
func Write(out io.Writer, host string, findings []Finding) {
	fmt.Fprintf(out, "gitops-addon doctor --hub: %s (the pre-flight checklist of docs/migrating-from-acm.md)\n\n", host)
	for _, f := range findings {
		fmt.Fprintf(out, "%d. %-44s %s\n   %s\n", f.Check, f.Title, f.Severity, f.Message)
	}
	switch Worst(findings) {
	case Blocker:
		fmt.Fprintln(out, "\nResult: a blocker: do what it says before step 1 of Moving over.")
	case Warning:
		fmt.Fprintln(out, "\nResult: no blocker; read each WARNING before step 1 of Moving over.")
	default:
		fmt.Fprintln(out, "\nResult: ready for step 1 of Moving over; keep this report to compare after the move.")
	}
}
