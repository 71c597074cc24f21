package main

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gitops-addon/gitops-addon/pkg/api/reasons"
	"github.com/gitops-addon/gitops-addon/pkg/api/v1alpha1"
	appsv1beta1 "github.com/gitops-addon/gitops-addon/pkg/api/v1beta1"
	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// The reason tables of docs/troubleshooting.md are rendered from the tables of conditions
// and reasons too, into a page otherwise written by hand: docgen rewrites what lies between
//
//	<!-- BEGIN generated: reasons of <block>; edit <source>, then make docs -->
//	<!-- END generated -->
//
// in the pages of the docs directory, the markers included, and leaves the rest of the page
// (its prose, headings and anchors) as it is. Each block is in exactly one page, once.

// reasonBlock is one generated table: the reasons a table of conditions and reasons sets on
// some of its conditions, with what each means and what to do.
type reasonBlock struct {
	// name is how the markers name the block ("reasons of <name>").
	name string
	// source is the file that declares the table, which the marker says to edit.
	source string
	table  reasons.Table
	// conditions selects the table's conditions whose reasons the block shows; nil: all.
	conditions func(condition string) bool
}

// agentModeConditions are the conditions of a cluster's addon that only Argo CD Agent mode
// sets: troubleshooting.md shows them in its own section.
var agentModeConditions = []string{contract.ConditionArgoCDAgentCertificate, contract.ConditionArgoCDAgentConnected}

// reasonBlocks are the blocks docgen renders, by name.
var reasonBlocks = []reasonBlock{
	{name: "the pull model", source: "pkg/api/v1alpha1/reasons.go", table: v1alpha1.Reasons},
	{name: "the GitOpsCluster", source: "pkg/api/v1beta1/reasons.go", table: appsv1beta1.Reasons},
	{name: "a cluster's addon", source: "pkg/contract/reasons.go", table: contract.Reasons,
		conditions: func(c string) bool { return !slices.Contains(agentModeConditions, c) }},
	{name: "Argo CD Agent mode", source: "pkg/contract/reasons.go", table: contract.Reasons,
		conditions: func(c string) bool { return slices.Contains(agentModeConditions, c) }},
}

const (
	beginMarker = "<!-- BEGIN generated: "
	endMarker   = "<!-- END generated -->"
)

// shows says whether the block has a row for r: r is set on one of its conditions.
func (b reasonBlock) shows(r reasons.Reason) bool {
	return slices.ContainsFunc(r.Conditions, func(c string) bool { return b.conditions == nil || b.conditions(c) })
}

// render is the block, its markers included, for the page at pagePath (the page's path from
// the repository root, which the links are made relative to).
func (b reasonBlock) render(pagePath string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%sreasons of %s; edit %s, then make docs -->\n\n", beginMarker, b.name, b.source)
	s.WriteString("| condition | reason | what it means | what to do |\n| --- | --- | --- | --- |\n")
	for _, r := range b.table.Reasons {
		if !b.shows(r) {
			continue
		}
		fmt.Fprintf(&s, "| %s | %s | %s | %s |\n", conditionsCell(b.table, r), code(r.Name), markdown(r.Meaning, pagePath),
			orDash(markdown(r.Fix, pagePath)))
	}
	s.WriteString("\n" + endMarker)
	return s.String()
}

// conditionsCell names the conditions a reason is set on: "any" when it is every one of
// its table's.
func conditionsCell(t reasons.Table, r reasons.Reason) string {
	every := len(t.Conditions) > 1
	for _, c := range t.Conditions {
		every = every && slices.Contains(r.Conditions, c.Type)
	}
	if every {
		return "any"
	}
	names := make([]string, len(r.Conditions))
	for i, c := range r.Conditions {
		names[i] = code(c)
	}
	return strings.Join(names, ", ")
}

// writeBlocks rewrites the generated blocks of the pages under docs (the directory that
// is docs/ in the repository): every block of reasonBlocks must be found there once.
func writeBlocks(root, docs string) error {
	if err := checkBlocksCoverTheReasons(root); err != nil {
		return err
	}
	found := map[string]string{}
	err := filepath.WalkDir(docs, func(file string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(file, ".md") {
			return err
		}
		rel, err := filepath.Rel(docs, file)
		if err != nil {
			return err
		}
		pagePath := path.Join("docs", filepath.ToSlash(rel))
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		filled, names, err := fillBlocks(string(raw), pagePath)
		if err != nil {
			return err
		}
		for _, name := range names {
			if where, twice := found[name]; twice {
				return fmt.Errorf("%s: the block %q is in %s already: keep one", pagePath, name, where)
			}
			found[name] = pagePath
		}
		if filled == string(raw) {
			return nil
		}
		return os.WriteFile(file, []byte(filled), 0o600) // an existing file keeps its mode
	})
	if err != nil {
		return err
	}
	for _, b := range reasonBlocks {
		if _, ok := found[b.name]; !ok {
			return fmt.Errorf("no page of %s has the block %q: put its markers (%sreasons of %s; ... --> and %s) where its "+
				"table goes in docs/troubleshooting.md", docs, b.name, beginMarker, b.name, endMarker)
		}
	}
	return nil
}

// fillBlocks renders each block of a page between its markers, and says which it found.
func fillBlocks(page, pagePath string) (string, []string, error) {
	lines := strings.Split(page, "\n")
	var out, names []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, endMarker) {
			return "", nil, fmt.Errorf("%s:%d: %s without a %s... line before it", pagePath, i+1, endMarker, beginMarker)
		}
		if !strings.HasPrefix(line, beginMarker) {
			out = append(out, line)
			continue
		}
		b, err := blockNamed(line)
		if err != nil {
			return "", nil, fmt.Errorf("%s:%d: %w", pagePath, i+1, err)
		}
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], endMarker) {
			if strings.HasPrefix(lines[end], beginMarker) {
				end = len(lines)
				break
			}
			end++
		}
		if end == len(lines) {
			return "", nil, fmt.Errorf("%s:%d: the block %q has no %s line after it", pagePath, i+1, b.name, endMarker)
		}
		out = append(out, b.render(pagePath))
		names = append(names, b.name)
		i = end
	}
	return strings.Join(out, "\n"), names, nil
}

// blockNamed is the block a BEGIN line names.
func blockNamed(line string) (reasonBlock, error) {
	what, _, _ := strings.Cut(strings.TrimPrefix(line, beginMarker), ";")
	what = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(what), "-->"))
	name, ok := strings.CutPrefix(what, "reasons of ")
	if ok {
		for _, b := range reasonBlocks {
			if b.name == name {
				return b, nil
			}
		}
	}
	var known []string
	for _, b := range reasonBlocks {
		known = append(known, fmt.Sprintf("%q", "reasons of "+b.name))
	}
	return reasonBlock{}, fmt.Errorf("no generated block is named %q; hack/docgen renders %s", what, strings.Join(known, ", "))
}

// checkBlocksCoverTheReasons: every reason set on a condition is in a block (a new table
// needs its block), and each block's source exists.
func checkBlocksCoverTheReasons(root string) error {
	for _, b := range reasonBlocks {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(b.source))); err != nil {
			return fmt.Errorf("the block %q: %w", b.name, err)
		}
	}
	for _, t := range contract.ReasonTables {
		for _, r := range t.Reasons {
			if len(r.Conditions) == 0 {
				continue
			}
			if !slices.ContainsFunc(reasonBlocks, func(b reasonBlock) bool { return b.table.Name == t.Name && b.shows(r) }) {
				return fmt.Errorf("the reason %s of the table %q is in no block of docs/troubleshooting.md: add one to "+
					"reasonBlocks (hack/docgen/blocks.go) and its markers to the page", r.Name, t.Name)
			}
		}
	}
	return nil
}
