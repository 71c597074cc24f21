package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gitops-addon/gitops-addon/pkg/api/reasons"
	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	"github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
)

// The conditions and reasons declared in a table (pkg/api/reasons) are rendered from it:
// each with what it means and what to do. The packages not moved to a table yet are still
// read from the code (conditions.go); a reason is documented in one place or the other.

// tables are the tables rendered, and tablePackages the packages whose constants they
// hold (the code reader leaves those out).
var (
	tables        = []reasons.Table{v1beta1.Reasons, v1alpha1.Reasons, v1alpha1.ReportReasons}
	tablePackages = []string{"pkg/api/v1beta1", "pkg/api/v1alpha1"}
)

// fromTable says whether the code reader leaves a constant of pkg to a table.
func fromTable(pkg string) bool { return slices.Contains(tablePackages, pkg) }

// tableConditions renders each table's condition types and reasons.
func tableConditions(b *strings.Builder) {
	for _, t := range tables {
		fmt.Fprintf(b, "## %s\n\nShown on %s.", t.Name, t.ShownOn)
		if t.EventsOn != "" {
			fmt.Fprintf(b, " Events on %s.", t.EventsOn)
		}
		b.WriteString("\n\n")
		b.WriteString("| Condition | Meaning | Reasons |\n| --- | --- | --- |\n")
		for _, c := range t.Conditions {
			var names []string
			for _, r := range t.Reasons {
				if slices.Contains(r.Conditions, c.Type) {
					names = append(names, code(r.Name))
				}
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", code(c.Type), cell(c.Meaning), orDash(strings.Join(names, ", ")))
		}
		if len(t.Reasons) == 0 {
			b.WriteString("\n")
			continue
		}
		b.WriteString("\n| Reason | Conditions | Event | Meaning | What to do |\n| --- | --- | --- | --- | --- |\n")
		for _, r := range t.Reasons {
			var conds []string
			for _, c := range r.Conditions {
				conds = append(conds, code(c))
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", code(r.Name), orDash(strings.Join(conds, ", ")), orDash(string(r.Event)),
				cell(r.Meaning), orDash(cell(r.Fix)))
		}
		b.WriteString("\n")
	}
}

// tableEvents renders each table's Event reasons, with the object they are on.
func tableEvents(b *strings.Builder) {
	for _, t := range tables {
		if !slices.ContainsFunc(t.Reasons, func(r reasons.Reason) bool { return r.Event != "" }) {
			continue
		}
		fmt.Fprintf(b, "\n## %s\n\n| Reason | Type | On | Meaning | What to do |\n| --- | --- | --- | --- | --- |\n", t.Name)
		for _, r := range t.Reasons {
			if r.Event == "" {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", code(r.Name), r.Event, cell(cmpOr(r.EventOn, t.EventsOn)), cell(r.Meaning), orDash(cell(r.Fix)))
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
