package doctor

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/doctor/preflight"
	"github.com/gitops-addon/gitops-addon/pkg/hub/schemes"
)

// RunHub runs the pre-flight checks of a move from Red Hat ACM's GitOps integration on
// the hub of cfg and writes the report to out: Healthy when nothing blocks the move (a
// warning is for the user to read), ProblemFound on a blocker.
func RunHub(ctx context.Context, cfg *rest.Config, out io.Writer) int {
	scheme, err := schemes.Hub()
	if err != nil {
		fmt.Fprintln(out, "cannot check:", err)
		return CannotCheck
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(out, "cannot check %s: %v\n", cfg.Host, err)
		return CannotCheck
	}
	facts, err := preflight.Read(ctx, c)
	if err != nil {
		fmt.Fprintf(out, "cannot check %s: %v\n", cfg.Host, err)
		return CannotCheck
	}
	findings := preflight.Assess(facts)
	preflight.Write(out, cfg.Host, findings)
	if preflight.Worst(findings) == preflight.Blocker {
		return ProblemFound
	}
	return Healthy
}
