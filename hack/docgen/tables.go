package main

import (
	"cmp"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gitops-addon/gitops-addon/pkg/api/reasons"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// conditions.md and events.md are rendered from the tables of conditions and reasons
// (pkg/api/reasons): each reason with what it means and what to do, declared once.
// test/repo's reason tests check that the code sets no reason outside them.

// The pages' paths from the repository root, which the tables' links are made relative to.
const (
	conditionsPath = "docs/reference/conditions.md"
	eventsPath     = "docs/reference/events.md"
)

func writeConditions(_, out string) error {
	if err := checkTexts(contract.ReasonTables); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(out, path.Base(conditionsPath)), []byte(conditionsPage(contract.ReasonTables))); err != nil {
		return err
	}
	return writeFile(filepath.Join(out, path.Base(eventsPath)), []byte(eventsPage(contract.ReasonTables)))
}

// conditionsPage renders each table's condition types and reasons.
func conditionsPage(tables []reasons.Table) string {
	b := page("Conditions and reasons", "Every condition type gitops-addon sets and every reason it sets on them, by the object "+
		"that carries them, with what each means and what to do; declared once, in `pkg/api/v1beta1`, `pkg/api/v1alpha1` and "+
		"`pkg/contract` (their `Reasons` tables). Events: [events.md](events.md). More context: [troubleshooting](../troubleshooting.md).\n")
	for _, t := range tables {
		fmt.Fprintf(b, "\n## %s\n\nShown on %s.\n\n", t.Name, markdown(t.ShownOn, conditionsPath))
		b.WriteString("| Condition | Meaning | Reasons |\n| --- | --- | --- |\n")
		for _, c := range t.Conditions {
			var names []string
			for _, r := range t.Reasons {
				if slices.Contains(r.Conditions, c.Type) {
					names = append(names, code(r.Name))
				}
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", code(c.Type), markdown(c.Meaning, conditionsPath), orDash(strings.Join(names, ", ")))
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
				markdown(r.Meaning, conditionsPath), orDash(markdown(r.Fix, conditionsPath)))
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
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", code(r.Name), r.Event, markdown(cmp.Or(r.EventOn, t.EventsOn), eventsPath),
				markdown(r.Meaning, eventsPath), orDash(markdown(r.Fix, eventsPath)))
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

// markdown is a table's text (Markdown, pkg/api/reasons) in a cell of the page at
// pagePath: its links, written from the repository root, made relative to the page.
func markdown(s, pagePath string) string {
	return cell(linkTarget.ReplaceAllStringFunc(s, func(link string) string {
		target := linkTarget.FindStringSubmatch(link)[1]
		if !strings.HasPrefix(target, "docs/") {
			return link
		}
		file, fragment, hasFragment := strings.Cut(target, "#")
		rel := ""
		if file != pagePath {
			rel = relativePath(path.Dir(pagePath), file)
		}
		if hasFragment {
			rel += "#" + fragment
		}
		return "](" + cmp.Or(rel, path.Base(file)) + ")"
	}))
}

// relativePath is the slash-separated path of file from the directory dir, both from the
// repository root.
func relativePath(dir, file string) string {
	from, to := strings.Split(dir, "/"), strings.Split(file, "/")
	for len(from) > 0 && len(to) > 1 && from[0] == to[0] {
		from, to = from[1:], to[1:]
	}
	return strings.Repeat("../", len(from)) + strings.Join(to, "/")
}

// linkTarget is a Markdown link's target.
var linkTarget = regexp.MustCompile(`\]\(([^)\s]*)\)`)

// checkTexts fails on a table's text that would not render as written: a raw `<` outside a
// code span (HTML to Markdown) or a relative link not written from the repository root.
func checkTexts(tables []reasons.Table) error {
	var problems []string
	check := func(where, text string) {
		prose := withoutCodeSpans(text)
		if strings.Contains(prose, "<") {
			problems = append(problems, fmt.Sprintf("%s: a < outside a code span (Markdown reads it as HTML): put the name in backticks", where))
		}
		for _, m := range linkTarget.FindAllStringSubmatch(prose, -1) {
			if target := m[1]; !strings.HasPrefix(target, "docs/") && !strings.Contains(target, "://") {
				problems = append(problems, fmt.Sprintf("%s: the link %s: write its target from the repository root (docs/...)", where, target))
			}
		}
	}
	for _, t := range tables {
		check(t.Name+" ShownOn", t.ShownOn)
		check(t.Name+" EventsOn", t.EventsOn)
		for _, c := range t.Conditions {
			check(t.Name+" condition "+c.Type, c.Meaning)
		}
		for _, r := range t.Reasons {
			check(t.Name+" reason "+r.Name+" EventOn", r.EventOn)
			check(t.Name+" reason "+r.Name+" Meaning", r.Meaning)
			check(t.Name+" reason "+r.Name+" Fix", r.Fix)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the tables of conditions and reasons (pkg/api/reasons: their texts are Markdown):\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

// withoutCodeSpans is s with its code spans removed.
func withoutCodeSpans(s string) string {
	var b strings.Builder
	for {
		start := strings.Index(s, "`")
		if start < 0 {
			return b.String() + s
		}
		b.WriteString(s[:start])
		fence := s[start:]
		fence = fence[:len(fence)-len(strings.TrimLeft(fence, "`"))]
		rest := s[start+len(fence):]
		end := closingFence(rest, fence)
		if end < 0 { // no closing fence: the backticks are literal
			b.WriteString(fence)
			s = rest
			continue
		}
		s = rest[end+len(fence):]
	}
}

// closingFence is the index in s of a run of backticks exactly as long as fence; -1 when none.
func closingFence(s, fence string) int {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], fence)
		if j < 0 {
			return -1
		}
		at := i + j
		run := len(s[at:]) - len(strings.TrimLeft(s[at:], "`"))
		if run == len(fence) {
			return at
		}
		i = at + run
	}
	return -1
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
