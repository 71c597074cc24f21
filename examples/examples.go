// Package examples holds the manifests users apply, as files (examples/seed) and, for the
// tests and the demo that apply the same ones, embedded.
package examples

import "embed"

//go:embed seed/*.yaml
var seed embed.FS

// Seed returns a file of the seed, the first GitOpsCluster of getting-started:
// "placement.yaml", "gitopscluster.yaml" or "applicationset.yaml".
func Seed(name string) []byte {
	b, err := seed.ReadFile("seed/" + name)
	if err != nil {
		panic(err)
	}
	return b
}
