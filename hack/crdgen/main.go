// Command crdgen regenerates the CustomResourceDefinitions the spoke agent installs (the
// Argo CD CRDs and the Routes CRD, embedded in the agent by pkg/spoke/crdinstall) from
// pinned upstream sources. Its output is never edited by hand: `make generate` runs
// `go run ./hack/crdgen`, and a test fails when the committed files differ from what this
// program produces.
//
// Every CRD keeps its whole schema, descriptions included, is labelled as gitops-addon's
// and annotated with its upstream file, then checked against etcd's request size limit.
package main

import (
	"flag"
	"fmt"
	"os"
)

// defaultOutDir is where crdgen writes when run from the repository root.
const defaultOutDir = "pkg/spoke/crdinstall/crds"

func main() {
	out := flag.String("out", defaultOutDir, "directory to write the CRD files into")
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
