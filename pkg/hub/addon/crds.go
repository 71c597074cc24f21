package addon

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/gitops-addon/gitops-addon/manifests"
)

// chartCRDs decodes the agent chart's crds/ once per process, in the order the addon
// framework would emit them (file name order, before any template). Every cluster gets
// the same CRDs: Helm never templates crds/, and hack/crdgen already trimmed their
// descriptions. Callers must copy the objects before handing them out.
var chartCRDs = sync.OnceValues(func() ([]runtime.Object, error) {
	return decodeCRDs(manifests.ChartFS, manifests.AgentChartCRDsDir)
})

func decodeCRDs(fsys fs.FS, dir string) ([]runtime.Object, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading the agent chart's CRDs: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the CRD scheme: %w", err)
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	var objects []runtime.Object
	for _, entry := range entries { // fs.ReadDir sorts by name, as Helm's loader does
		if entry.IsDir() || !isManifestFile(entry.Name()) {
			continue
		}
		file := path.Join(dir, entry.Name())
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		object, _, err := decoder.Decode(data, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", file, err)
		}
		if _, ok := object.(*apiextensionsv1.CustomResourceDefinition); !ok {
			return nil, fmt.Errorf("%s holds a %T, not a CustomResourceDefinition", file, object)
		}
		objects = append(objects, object)
	}
	if len(objects) == 0 {
		return nil, fmt.Errorf("the agent chart has no CRDs in %s", dir)
	}
	return objects, nil
}

// isManifestFile says whether Helm counts a file in crds/ as a CRD manifest.
func isManifestFile(name string) bool {
	ext := path.Ext(name)
	return strings.EqualFold(ext, ".yaml") || strings.EqualFold(ext, ".yml") || strings.EqualFold(ext, ".json")
}
