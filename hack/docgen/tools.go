package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// The generators pinned in hack/tools/docs, run with `go run` in that module so that
// their dependencies stay out of the product's module graph.
const (
	crdRefDocs = "github.com/elastic/crd-ref-docs"
	helmDocs   = "github.com/norwoodj/helm-docs/cmd/helm-docs"
)

// goRunTool runs a generator of hack/tools/docs and returns its combined output.
func goRunTool(root, tool string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"-C", filepath.Join(root, "hack", "tools", "docs"), "run", tool}, args...)...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return output.Bytes(), fmt.Errorf("go run %s: %w\n%s", tool, err, output.String())
	}
	return output.Bytes(), nil
}

// writeAPI writes api.md with crd-ref-docs over pkg/api.
func writeAPI(root, out string) error {
	target := filepath.Join(out, "api.md")
	if _, err := goRunTool(root, crdRefDocs, "--source-path="+filepath.Join(root, "pkg", "api"),
		"--config="+filepath.Join(root, "hack", "docgen", "crd-ref-docs.yaml"), "--renderer=markdown",
		"--output-path="+target, "--log-level=ERROR"); err != nil {
		return err
	}
	raw, err := os.ReadFile(target)
	if err != nil {
		return err
	}
	return writeFile(target, append([]byte(generatedNotice), tidy(raw)...))
}

// writeChartValues writes chart-values.md: helm-docs' table of values.yaml (strict: a
// value without a `# --` comment fails), then the constraints of values.schema.json.
func writeChartValues(root, out string) error {
	chart := filepath.Join(root, "charts", "gitops-addon")
	target := filepath.Join(out, "chart-values.md")
	rel, err := filepath.Rel(chart, target) // helm-docs writes relative to the chart
	if err != nil {
		return err
	}
	log, err := goRunTool(root, helmDocs, "--chart-search-root="+chart, "--output-file="+rel,
		"--template-files="+filepath.Join(root, "hack", "docgen", "chart-values.md.gotmpl"),
		"--sort-values-order=file",
		"--log-level=warning")
	if err != nil {
		return err
	}
	// helm-docs logs a chart it cannot document (strict mode) and exits 0.
	raw, err := os.ReadFile(target)
	if err != nil {
		return fmt.Errorf("helm-docs wrote no %s; every value of %s needs a comment starting with `# -- `:\n%s",
			target, filepath.Join(chart, "values.yaml"), log)
	}
	if undocumented := undocumentedValues(raw); len(undocumented) > 0 {
		return fmt.Errorf("values without a description in %s: %s; give each a comment starting with `# -- ` right above it "+
			"(a ` -- ` inside the comment's first line makes helm-docs read it as another key's: reword it)",
			filepath.Join(chart, "values.yaml"), strings.Join(undocumented, ", "))
	}
	schema, err := schemaConstraints(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		return err
	}
	return writeFile(target, append(tidy(raw), []byte(schema)...))
}

// undocumentedValues are the keys of helm-docs' values table whose description is empty
// (helm-docs' own strict mode reads only its older comment format).
func undocumentedValues(table []byte) []string {
	var keys []string
	for _, line := range strings.Split(string(table), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) != 4 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Key ") {
			continue
		}
		if strings.TrimSpace(strings.TrimSuffix(cells[3], "|")) == "" {
			keys = append(keys, strings.TrimPrefix(cells[0], "| "))
		}
	}
	return keys
}

// tidy drops trailing spaces and runs of blank lines from a generator's output.
func tidy(raw []byte) []byte {
	lines := strings.Split(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n")
	var out []string
	for _, line := range lines {
		line = strings.TrimRight(line, " \t")
		if line == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, line)
	}
	return []byte(strings.TrimSpace(strings.Join(out, "\n")) + "\n")
}

// jsonSchema is the part of JSON Schema values.schema.json uses.
type jsonSchema struct {
	Type                 any                    `json:"type"`
	Required             []string               `json:"required"`
	Properties           map[string]*jsonSchema `json:"properties"`
	AdditionalProperties any                    `json:"additionalProperties"`
	Items                *jsonSchema            `json:"items"`
	Enum                 []any                  `json:"enum"`
	Minimum              *float64               `json:"minimum"`
	Maximum              *float64               `json:"maximum"`
	MinLength            *int                   `json:"minLength"`
	MaxLength            *int                   `json:"maxLength"`
	Pattern              string                 `json:"pattern"`
	UniqueItems          bool                   `json:"uniqueItems"`
	Deprecated           bool                   `json:"deprecated"`
	Description          string                 `json:"description"`
}

// schemaConstraints renders what values.schema.json allows for each value it constrains.
func schemaConstraints(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var root jsonSchema
	if err := json.Unmarshal(raw, &root); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var rows []string
	var walk func(prefix string, s *jsonSchema, required map[string]bool)
	walk = func(prefix string, s *jsonSchema, required map[string]bool) {
		for _, name := range sortedKeys(s.Properties) {
			p := s.Properties[name]
			key := strings.TrimPrefix(prefix+"."+name, ".")
			if allowed := constraints(p, required[name]); allowed != "" {
				rows = append(rows, fmt.Sprintf("| %s | %s | %s |", code(key), schemaType(p), allowed))
			}
			if len(p.Properties) > 0 {
				walk(key, p, setOf(p.Required))
			}
		}
	}
	walk("", &root, setOf(root.Required))
	var b strings.Builder
	b.WriteString("\n## What `values.schema.json` allows\n\n")
	b.WriteString("Helm refuses an install or upgrade whose values break these rules, naming the value. Objects accept no keys but " +
		"those above (`additionalProperties: false`), so a misspelt value is an error, not ignored.\n\n")
	b.WriteString("| Key | Type | Allowed |\n| --- | --- | --- |\n")
	b.WriteString(strings.Join(rows, "\n"))
	b.WriteString("\n")
	return b.String(), nil
}

func setOf(list []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range list {
		m[s] = true
	}
	return m
}

func schemaType(s *jsonSchema) string {
	switch t := s.Type.(type) {
	case string:
		if t == "array" && s.Items != nil {
			if it, ok := s.Items.Type.(string); ok {
				return t + " of " + it
			}
		}
		return t
	case []any:
		var names []string
		for _, x := range t {
			names = append(names, fmt.Sprint(x))
		}
		return strings.Join(names, " or ")
	}
	return "any"
}

// constraints says in words what a property allows; "" when it allows any value of its type.
func constraints(s *jsonSchema, required bool) string {
	var parts []string
	if s.Deprecated {
		// The schema's description of a deprecated value says what it has become.
		parts = append(parts, cmp.Or(strings.TrimSuffix(s.Description, "."), "deprecated"))
	}
	if required {
		parts = append(parts, "required")
	}
	if len(s.Enum) > 0 {
		var values []string
		for _, v := range s.Enum {
			values = append(values, code(fmt.Sprint(v)))
		}
		parts = append(parts, "one of "+strings.Join(values, ", "))
	}
	if s.Minimum != nil {
		parts = append(parts, fmt.Sprintf("at least %v", *s.Minimum))
	}
	if s.Maximum != nil {
		parts = append(parts, fmt.Sprintf("at most %v", *s.Maximum))
	}
	if s.MinLength != nil {
		parts = append(parts, fmt.Sprintf("at least %d character(s)", *s.MinLength))
	}
	if s.MaxLength != nil {
		parts = append(parts, fmt.Sprintf("at most %d characters", *s.MaxLength))
	}
	if s.Pattern != "" {
		parts = append(parts, "matches "+code(s.Pattern))
	}
	if s.UniqueItems {
		parts = append(parts, "no duplicates")
	}
	if s.Items != nil {
		if s.Items.Pattern != "" {
			parts = append(parts, "each item matches "+code(s.Items.Pattern))
		}
		if len(s.Items.Required) > 0 {
			parts = append(parts, "each item has "+strings.Join(quoteAll(s.Items.Required), ", "))
		}
	}
	return strings.Join(parts, "; ")
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = code(s)
	}
	return out
}

// writeIndex writes README.md, the index of the reference.
func writeIndex(_, out string) error {
	var cli []string
	entries, err := os.ReadDir(filepath.Join(out, "cli"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		cli = append(cli, e.Name())
	}
	sort.Strings(cli)
	b := page("Reference", "Generated from the code by `make docs` (`go run ./hack/docgen`); `go test ./test/generated/` fails when "+
		"a page is not what the code says, so these pages are current with the code they sit beside.\n\n")
	b.WriteString("| page | what | generated from |\n| --- | --- | --- |\n")
	b.WriteString("| [api.md](api.md) | the GitOpsCluster (`apps.open-cluster-management.io/v1beta1`) and MulticlusterApplicationSetReport " +
		"(`v1alpha1`) API: every field, its meaning, default and validation | the Go types' comments and kubebuilder markers in " +
		"`pkg/api`, by crd-ref-docs |\n")
	b.WriteString("| [conditions.md](conditions.md) | every condition type and reason, where it shows, what it means, its message " +
		"template | the `Condition*` and `Reason*` constants in `pkg/` and the code that sets them (`hack/docgen`) |\n")
	b.WriteString("| [events.md](events.md) | every Event reason, its type and message template | the `Eventf` and `event` calls " +
		"in `pkg/` (`hack/docgen`) |\n")
	b.WriteString("| [chart-values.md](chart-values.md) | every value of the manager chart, its default and what the schema allows | " +
		"`charts/gitops-addon/values.yaml` (`# --` comments, by helm-docs) and `values.schema.json` |\n")
	fmt.Fprintf(b, "| [cli/](cli/%s) | the `gitops-addon` binary's commands and flags: ", cli[0])
	var links []string
	for _, name := range cli {
		command := strings.ReplaceAll(strings.TrimSuffix(name, ".md"), "_", " ")
		links = append(links, fmt.Sprintf("[%s](cli/%s)", command, name))
	}
	b.WriteString(strings.Join(links, ", "))
	b.WriteString(" | the cobra command tree of `pkg/cmd`, by cobra's doc generator |\n")
	return writeFile(filepath.Join(out, "README.md"), []byte(b.String()))
}
