// Command crdgen regenerates the CustomResourceDefinitions shipped by the
// gitops-addon-agent chart from pinned upstream sources. Its output is never edited by
// hand: `make generate` runs `go run ./hack/crdgen`, and a test fails when the committed
// files differ from what this program produces.
//
// Every CRD is trimmed of schema descriptions and annotated so that deleting the addon
// never deletes it, then checked against a size budget: OCM rejects ManifestWorks over
// 500 KiB and the addon framework cannot split a single object across ManifestWorks.
package main

import (
	"flag"
	"fmt"
	"os"
)

// defaultChartDir is the chart crdgen writes into when run from the repository root.
const defaultChartDir = "manifests/charts/gitops-addon-agent"

func main() {
	out := flag.String("out", defaultChartDir,
		"chart directory to write crds/ and files/ into")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "crdgen: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}

	if err := run(*out, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "crdgen: %v\n", err)
		os.Exit(1)
	}
}
