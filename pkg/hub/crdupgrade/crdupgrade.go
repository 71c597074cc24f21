// Package crdupgrade brings the hub's CRDs (GitOpsCluster, MulticlusterApplicationSetReport)
// to the schema the running manager was built with. Helm installs a chart's crds/ once and
// never upgrades them, so after `helm upgrade` the hub would keep serving the old schema:
// new fields pruned, new CEL rules not enforced, and no error anywhere. The manager applies
// its embedded CRDs by server-side apply when it starts, under rules that lose nothing:
//
//   - a CRD is never deleted;
//   - a CRD applied by a newer manager (a higher schema revision) is not downgraded: an
//     Event and the log say so, the manager keeps running on the newer schema;
//   - a CRD whose stored versions the embedded schema would drop is not applied (objects
//     stored in that version would become unreadable): Event and log name the version;
//   - a CRD installed by someone else (OLM, Red Hat ACM's installer, another chart) is left
//     alone and named, never fought over.
package crdupgrade

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/gitops-addon/gitops-addon/charts"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/crdowner"
)

const (
	// AnnotationSchemaRevision records on each CRD the schema revision of the manager that
	// last applied it.
	AnnotationSchemaRevision = "gitops-addon.open-cluster-management.io/schema-revision"
	// FieldManager is the manager's server-side apply field manager for its CRDs.
	FieldManager = "gitops-addon-manager"
)

// SchemaRevision is the revision of the CRDs embedded in this binary. Whenever
// `make manifests` changes one of them, bump it and record the new hash in
// revisions_test.go (the test that checks it says so): an older manager, which carries a
// lower revision, then refuses to apply its schema over the newer one.
const SchemaRevision = 7

// CRD is one embedded CRD, ready to be applied.
type CRD struct {
	Name string
	// Versions are the names of the versions the embedded schema serves.
	Versions []string
	// Apply is the CRD as server-side apply JSON, labelled and annotated as ours.
	Apply []byte
}

// Load reads the embedded CRDs.
func Load() ([]CRD, error) {
	return load(charts.CRDs, charts.CRDDir)
}

func load(fsys fs.FS, dir string) ([]CRD, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing the embedded CRDs: %w", err)
	}
	sort.Strings(files)
	var out []CRD
	for _, file := range files {
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("reading embedded CRD %s: %w", file, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding embedded CRD %s: %w", file, err)
		}
		c, err := prepare(crd)
		if err != nil {
			return nil, fmt.Errorf("preparing embedded CRD %s: %w", file, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRD embedded under %s", dir)
	}
	return out, nil
}

func prepare(crd *apiextensionsv1.CustomResourceDefinition) (CRD, error) {
	crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	if crd.Labels == nil {
		crd.Labels = map[string]string{}
	}
	crd.Labels[contract.LabelManagedBy] = contract.ManagedByValue
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	crd.Annotations[AnnotationSchemaRevision] = strconv.Itoa(SchemaRevision)
	apply, err := json.Marshal(crd)
	if err != nil {
		return CRD{}, err
	}
	versions := make([]string, 0, len(crd.Spec.Versions))
	for _, v := range crd.Spec.Versions {
		versions = append(versions, v.Name)
	}
	return CRD{Name: crd.Name, Versions: versions, Apply: apply}, nil
}

// hash is a digest of the embedded CRDs' schemas, recorded per SchemaRevision.
func hash(crds []CRD) string {
	h := sha256.New()
	for _, c := range crds {
		h.Write([]byte(c.Name))
		h.Write(c.Apply)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// action is what to do with one CRD.
type action int

const (
	apply  action = iota // create it, or bring it to the embedded schema
	refuse               // ours, but applying would downgrade it or strand stored objects
	leave                // someone else's
)

type verdict struct {
	action action
	// why is a sentence for the log and an Event, naming the problem and the fix.
	why string
}

// decide says what to do with a CRD given what the apiserver has (nil: nothing).
func decide(desired CRD, current *apiextensionsv1.CustomResourceDefinition) verdict {
	if current == nil {
		return verdict{action: apply, why: "installing"}
	}
	if who := foreignProvider(current); who != "" {
		return verdict{action: leave, why: fmt.Sprintf("CRD %s was installed by %s, not by gitops-addon; it is left as it is. "+
			"The manager works with it if it serves the same versions; to let gitops-addon manage it, remove it with its installer first.", current.Name, who)}
	}
	if rev, ok := revisionOf(current); ok && rev > SchemaRevision {
		return verdict{action: refuse, why: fmt.Sprintf("CRD %s has schema revision %d, newer than this manager's %d: refusing to downgrade it. "+
			"Run the manager version that installed it (or newer); the CRD keeps serving the newer schema meanwhile.", current.Name, rev, SchemaRevision)}
	}
	for _, stored := range current.Status.StoredVersions {
		if !slices.Contains(desired.Versions, stored) {
			return verdict{action: refuse, why: fmt.Sprintf("CRD %s still has objects stored as version %s, which this manager's schema (%s) does not serve: refusing "+
				"to apply it. "+
				"Migrate the stored objects to a served version and remove %s from status.storedVersions "+
				"first.", current.Name, stored, strings.Join(desired.Versions, ", "), stored)}
		}
	}
	return verdict{action: apply, why: "upgrading"}
}

// revisionOf reads the schema revision a manager recorded on a CRD; a CRD without one
// was installed by Helm from the chart's crds/, before any manager applied it.
func revisionOf(crd *apiextensionsv1.CustomResourceDefinition) (int, bool) {
	value, ok := crd.Annotations[AnnotationSchemaRevision]
	if !ok {
		return 0, false
	}
	rev, err := strconv.Atoi(value)
	return rev, err == nil
}

// foreignProvider names who else installed a CRD, or "" when it is ours: applied by a
// manager (our label), or installed by Helm from our chart's crds/ (no installer labels at
// all: Helm adds none to CRDs).
func foreignProvider(crd *apiextensionsv1.CustomResourceDefinition) string {
	return crdowner.Other(crd.Labels)
}
