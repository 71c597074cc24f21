// Command gitops-addon is the single binary of gitops-addon: the hub manager, the spoke
// agent, and the render, doctor and version tools.
package main

import (
	"os"

	"github.com/gitops-addon/gitops-addon/pkg/cmd"
)

func main() {
	os.Exit(cmd.Execute())
}
