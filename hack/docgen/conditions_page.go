package main

import (
	"fmt"
	"sort"
	"strings"
)

// conditionsPage renders conditions.md: the condition types, then every reason, grouped
// by the package that declares it and, within it, by its const group.
func (idx *codeIndex) conditionsPage() (string, error) {
	b := page("Conditions and reasons", "Every condition type and reason gitops-addon sets. Those of a table (`pkg/api/reasons`: "+
		"the GitOpsCluster's so far) come from it, with what each means and what to do; the others are read from the constants in "+
		"`pkg/` and from the code that sets them. A message template is the text a user sees, with `<expression>` where the code puts a value "+
		"computed at run time (the Go expression that computes it); a reason whose message is built elsewhere has none here. "+
		"What to do about each reason: [troubleshooting](../troubleshooting.md).\n\n")

	tableConditions(b)
	b.WriteString("## Condition types\n\n")
	b.WriteString("| Type | Shown on | Meaning | Reasons |\n| --- | --- | --- | --- |\n")
	for _, t := range idx.sortedConditionTypes() {
		where, err := whereShown(t.pkg)
		if err != nil {
			return "", err
		}
		var reasons []string
		for _, r := range idx.sortedReasons() {
			for _, s := range r.sites {
				if s.conditionType == t.value {
					reasons = append(reasons, code(r.value))
					break
				}
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(t.value), cell(where), cell(meaning(t.doc, constName(t.def))), orDash(strings.Join(reasons, ", ")))
	}

	b.WriteString("\n## Reasons\n\nGrouped by the package that declares them; the condition is the one the code sets the reason on, " +
		"where it says so next to it.\n")
	byPkg := map[string][]*reasonDef{}
	for _, r := range idx.sortedReasons() {
		byPkg[r.pkg] = append(byPkg[r.pkg], r)
	}
	for _, pkg := range sortedKeys(byPkg) {
		where, err := whereShown(pkg)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(b, "\n### %s\n\nShown on %s.\n", code(pkg), where)
		groups, order := groupReasons(byPkg[pkg])
		for _, g := range order {
			if g != "" {
				fmt.Fprintf(b, "\n%s\n", g)
			}
			b.WriteString("\n| Reason | Condition | Meaning | Message (template) | Set in |\n| --- | --- | --- | --- | --- |\n")
			for _, r := range groups[g] {
				conds, messages, places := r.summary()
				if places == "" {
					places = "declared, never set"
					if e := idx.events[r.value]; e != nil && e.def == r.def {
						places = "the reason of an Event only: [events.md](events.md#" + anchor(e.sites[0].pkg) + ")"
					}
				}
				fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", code(r.value), orDash(conds), cell(meaning(docOf(r), constName(r.def))),
					orDash(messages), orDash(places))
			}
		}
	}
	return b.String(), nil
}

// eventsPage renders events.md: every Event reason recorded with a constant or a literal.
func (idx *codeIndex) eventsPage() (string, error) {
	b := page("Events", "Every Event reason gitops-addon records by name, read from the code's `Eventf` and `event` calls, with the "+
		"message template (`<expression>`: a value computed at run time). `kubectl describe` shows an object's Events; "+
		"`kubectl get events -A --field-selector type=Warning` lists the warnings. The pull model also records each "+
		"[reason of a hub Application's condition](conditions.md#hub-application-pull-model) as an Event on it, and the GitOpsCluster "+
		"controller each failed step's [condition reason](conditions.md#gitopscluster).\n")
	tableEvents(b)
	byPkg := map[string][]*reasonDef{}
	for _, value := range sortedKeys(idx.events) {
		r := idx.events[value]
		byPkg[r.sites[0].pkg] = append(byPkg[r.sites[0].pkg], r)
	}
	for _, pkg := range sortedKeys(byPkg) {
		where, err := whereRecorded(pkg)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(b, "\n## %s\n\nOn %s.\n\n", code(pkg), where)
		b.WriteString("| Reason | Type | Message (template) | Recorded in |\n| --- | --- | --- | --- |\n")
		for _, r := range byPkg[pkg] {
			var eventTypes, messages, places []string
			for _, s := range r.sites {
				eventTypes = appendNew(eventTypes, s.eventType)
				messages = appendNew(messages, code(s.message))
				places = appendNew(places, place(s))
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(r.value), strings.Join(eventTypes, ", "), strings.Join(messages, "<br>"),
				strings.Join(places, "<br>"))
		}
	}
	return b.String(), nil
}

// page starts a generated page: the notice, the title and the introduction.
func page(title, intro string) *strings.Builder {
	b := &strings.Builder{}
	b.WriteString(generatedNotice + "# " + title + "\n\n" + intro)
	return b
}

// summary is what the reason's sites say: the conditions, the message templates and
// the places, each once.
func (r *reasonDef) summary() (conditions, messages, places string) {
	var conds, msgs, where []string
	for _, s := range r.sites {
		if s.conditionType != "" {
			conds = appendNew(conds, code(s.conditionType))
		}
		if s.message != "" {
			msgs = appendNew(msgs, code(s.message))
		}
		where = appendNew(where, place(s))
	}
	return strings.Join(conds, ", "), strings.Join(msgs, "<br>"), strings.Join(where, "<br>")
}

// groupReasons groups a package's reasons by their const group's comment, in the order
// the groups' first reasons sort; literal reasons and lone constants come under "".
func groupReasons(reasons []*reasonDef) (map[string][]*reasonDef, []string) {
	groups := map[string][]*reasonDef{}
	var order []string
	for _, r := range reasons {
		g := ""
		if r.def != nil {
			g = r.def.group
		}
		if _, seen := groups[g]; !seen {
			order = append(order, g)
		}
		groups[g] = append(groups[g], r)
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i] < order[j] })
	return groups, order
}

func (idx *codeIndex) sortedConditionTypes() []*conditionTypeDef {
	return sortedValues(idx.conditionTypes, func(t *conditionTypeDef) string { return t.pkg + "\x00" + t.value })
}

func (idx *codeIndex) sortedReasons() []*reasonDef {
	return sortedValues(idx.reasons, func(r *reasonDef) string { return r.pkg + "\x00" + r.value })
}

func docOf(r *reasonDef) string {
	if r.def == nil {
		return ""
	}
	return r.def.doc
}

func constName(c *constDef) string {
	if c == nil {
		return ""
	}
	return c.name
}

// meaning is a constant's comment without the constant's name it starts with.
func meaning(doc, name string) string {
	if doc == "" {
		return "—"
	}
	if name != "" {
		if rest, ok := strings.CutPrefix(doc, name); ok {
			rest = strings.TrimLeft(rest, ": ")
			rest = strings.TrimPrefix(rest, "is ")
			if rest != "" {
				doc = strings.ToUpper(rest[:1]) + rest[1:]
			}
		}
	}
	return doc
}

// place is where a site is: its file, linked from docs/reference, and its function.
func place(s site) string {
	link := fmt.Sprintf("[%s](../../%s)", s.file[strings.LastIndex(s.file, "/")+1:], s.file)
	if s.function == "" {
		return link
	}
	return link + " " + code(s.function)
}

// anchor is GitHub's anchor of a heading that is the code span of s.
func anchor(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
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

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
