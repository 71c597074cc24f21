// Package doctor runs the spoke agent's Route API and /openapi/v2 checks against any
// cluster, with no hub, and says what is wrong and the exact fix.
package doctor

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/openapicheck"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/routeapi"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/schemes"
)

// Exit codes of Run.
const (
	Healthy      = 0
	ProblemFound = 1
	CannotCheck  = 2
)

// Run checks the cluster of cfg and writes a report to out.
func Run(ctx context.Context, cfg *rest.Config, out io.Writer) int {
	scheme, err := schemes.Spoke()
	if err != nil {
		fmt.Fprintln(out, "cannot check:", err)
		return CannotCheck
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(out, "cannot check %s: %v\n", cfg.Host, err)
		return CannotCheck
	}
	checker, err := openapicheck.New(cfg)
	if err != nil {
		fmt.Fprintf(out, "cannot check %s: %v\n", cfg.Host, err)
		return CannotCheck
	}
	return check(ctx, c, checker, cfg.Host, out)
}

func check(ctx context.Context, c client.Reader, checker *openapicheck.Checker, host string, out io.Writer) int {
	fmt.Fprintf(out, "gitops-addon doctor: %s\n\n", host)
	facts, err := routeapi.ReadFacts(ctx, c)
	cls := routeapi.Classify(facts, err)
	fmt.Fprintf(out, "Route API:              %s\n  %s\n", cls.Reason, cls.Message)
	if err != nil {
		fmt.Fprintln(out, "\nResult: could not check (no decision is taken on an unknown Route API).")
		return CannotCheck
	}
	problem := false
	dups := routeapi.DuplicateSurfaces(facts)
	if len(dups) == 0 {
		fmt.Fprintln(out, "Duplicate API surfaces:  none")
	} else {
		problem = true
		fmt.Fprintln(out, "Duplicate API surfaces:")
		for _, d := range dups {
			fmt.Fprintf(out, "  - %s\n", d)
		}
	}
	res, err := checker.Check(ctx, routeapi.ServedCRDGroupVersions(facts))
	if err != nil {
		fmt.Fprintf(out, "/openapi/v2:             could not check: %v\n", err)
		return CannotCheck
	}
	status := "healthy"
	if !res.Healthy() {
		status, problem = "BROKEN", true
	}
	fmt.Fprintf(out, "/openapi/v2:             %s\n  %s\n", status, res.Describe())

	if !problem {
		fmt.Fprintln(out, "\nResult: healthy.")
		return Healthy
	}
	fmt.Fprintln(out, "\nFix:")
	for _, d := range dups {
		if d.CRD == contract.RoutesCRDName {
			fmt.Fprintf(out, "  kubectl delete crd %s\n    Routes stay: %s serves them natively. (The gitops-addon agent does this by itself.)\n", d.CRD, d.APIService)
		} else {
			fmt.Fprintf(out, "  kubectl delete crd %s\n    only if %s should serve %s/%s; otherwise remove the APIService "+
				"%s.\n", d.CRD, d.Service, d.Group, d.Version, d.APIService)
		}
	}
	if len(dups) == 0 {
		fmt.Fprintln(out, "  No duplicate API surface is left: restart kube-apiserver to rebuild /openapi/v2, or recheck in a minute.")
	}
	fmt.Fprintln(out, "\nResult: problem found.")
	return ProblemFound
}
