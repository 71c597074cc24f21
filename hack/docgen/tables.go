package main

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gitops-addon/gitops-addon/pkg/api/reasons"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// conditions.md and events.md are rendered from the tables of conditions and reasons
// (pkg/api/reasons): each reason with what it means and what to do, declared once.
// test/repo's reason tests check that the code sets no reason outside them.

func writeConditions(_, out string) error {
	if err := writeFile(filepath.Join(out, "conditions.md"), []byte(conditionsPage(contract.ReasonTables))); err != nil {
		return err
	}
	return writeFile(filepath.Join(out, "events.md"), []byte(eventsPage(contract.ReasonTables)))
}

// conditionsPage renders each table's condition types and reasons.
func conditionsPage(tables []reasons.Table) string {
	b := page("Conditions and reasons", "Every condition type gitops-addon sets and every reason it sets on them, by the object "+
		"that carries them, with what each means and what to do; declared once, in `pkg/api/v1beta1`, `pkg/api/v1alpha1` and "+
		"`pkg/contract` (their `Reasons` tables). Events: [events.md](events.md). More context: [troubleshooting](../troubleshooting.md).\n")
	for _, t := range tables {
		fmt.Fprintf(b, "\n## %s\n\nShown on %s.\n\n", t.Name, t.ShownOn)
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
		var onConditions []reasons.Reason
		for _, r := range t.Reasons {
			if len(r.Conditions) > 0 {
				onConditions = append(onConditions, r)
			}
		}
		if len(onConditions) == 0 {
			continue
		}
		b.WriteString("\n| Reason | Conditions | Also an Event | Meaning | What to do |\n| --- | --- | --- | --- | --- |\n")
		for _, r := range onConditions {
			conds := make([]string, len(r.Conditions))
			for i, c := range r.Conditions {
				conds[i] = code(c)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", code(r.Name), strings.Join(conds, ", "), orDash(string(r.Event)),
				cell(r.Meaning), orDash(cell(r.Fix)))
		}
	}
	return b.String()
}

// eventsPage renders every reason an Event carries, by table, with the object it is on.
func eventsPage(tables []reasons.Table) string {
	b := page("Events", "Every Event reason gitops-addon records, with the object it is on, what it means and what to do. "+
		"`kubectl describe` shows an object's Events; `kubectl get events -A --field-selector type=Warning` lists the warnings. "+
		"A reason that is also a condition's is explained with its condition in [conditions.md](conditions.md).\n")
	for _, t := range tables {
		var events []reasons.Reason
		for _, r := range t.Reasons {
			if r.Event != "" {
				events = append(events, r)
			}
		}
		if len(events) == 0 {
			continue
		}
		sort.SliceStable(events, func(i, j int) bool { return events[i].Event > events[j].Event }) // Warnings first
		fmt.Fprintf(b, "\n## %s\n\n| Reason | Type | On | Meaning | What to do |\n| --- | --- | --- | --- | --- |\n", t.Name)
		for _, r := range events {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", code(r.Name), r.Event, cell(cmp.Or(r.EventOn, t.EventsOn)), cell(r.Meaning),
				orDash(cell(r.Fix)))
		}
	}
	return b.String()
}

// page starts a generated page: the notice, the title and the introduction.
func page(title, intro string) *strings.Builder {
	b := &strings.Builder{}
	b.WriteString(generatedNotice + "# " + title + "\n\n" + intro)
	return b
}

// code is a Markdown code span of s, safe in a table cell.
func code(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + strings.ReplaceAll(s, "|", `\|`) + pad + fence
}

// cell is text safe in a table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", `\|`)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
