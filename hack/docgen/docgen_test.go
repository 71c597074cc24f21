package main

import (
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const samplePackage = `package sample

import "fmt"

// Reasons of the Widget condition.
const (
	// ReasonBroken: the widget is broken.
	ReasonBroken = "Broken"
	ReasonFine   = "Fine"
	// ReasonUnused is declared and never set.
	ReasonUnused = "Unused"
)

const ConditionWidget = "Widget"

type Condition struct{ Type, Status, Reason, Message string }

func widget(err error, n int) Condition {
	c := Condition{Type: ConditionWidget}
	if err != nil {
		c.Status, c.Reason = "False", ReasonBroken
		c.Message = fmt.Sprintf("%d widgets are broken: %v", n, err) + " Fix: " + "replace them."
		return c
	}
	return Condition{Type: ConditionWidget, Reason: ReasonFine, Message: "All " + ConditionWidget + "s are fine."}
}

func (r *recorder) warn() {
	r.Recorder.Eventf(nil, nil, "Warning", "WidgetLost", "Count", "lost %q after %s", r.name, r.wait)
}
`

func sampleIndex(t *testing.T) *codeIndex {
	t.Helper()
	idx := &codeIndex{fset: token.NewFileSet(), packages: map[string]*codePackage{}, conditionTypes: map[string]*conditionTypeDef{},
		reasons: map[string]*reasonDef{}, events: map[string]*reasonDef{}}
	f, err := parser.ParseFile(idx.fset, "sample.go", samplePackage, parser.ParseComments)
	require.NoError(t, err)
	p := &codePackage{dir: "pkg/spoke/sample", name: "sample", consts: map[string]*constDef{}}
	p.files = append(p.files, &codeFile{path: "pkg/spoke/sample/sample.go", ast: f, imports: map[string]string{}})
	idx.packages[p.dir] = p
	collectConsts(p, p.files[0])
	for _, c := range p.consts {
		require.NoError(t, idx.resolveConst(c, 0))
	}
	require.NoError(t, idx.scan())
	return idx
}

func TestReasonsComeWithTheirConditionAndMessageTemplate(t *testing.T) {
	idx := sampleIndex(t)
	broken := idx.reasons["pkg/spoke/sample.Broken"]
	require.NotNil(t, broken)
	require.Len(t, broken.sites, 1)
	assert.Equal(t, "Widget", broken.sites[0].conditionType, "from the condition the function builds")
	assert.Equal(t, "<n> widgets are broken: <err> Fix: replace them.", broken.sites[0].message,
		"the Message assigned after the reason, Printf verbs as the expressions they print")
	assert.Equal(t, "widget", broken.sites[0].function)

	fine := idx.reasons["pkg/spoke/sample.Fine"]
	require.Len(t, fine.sites, 1)
	assert.Equal(t, "All Widgets are fine.", fine.sites[0].message, "constants by their value")

	unused := idx.reasons["pkg/spoke/sample.Unused"]
	require.NotNil(t, unused, "a declared reason is listed even when nothing sets it")
	assert.Empty(t, unused.sites)

	lost := idx.events["WidgetLost"]
	require.NotNil(t, lost)
	assert.Equal(t, `lost "<r.name>" after <r.wait>`, lost.sites[0].message)
	assert.Equal(t, "recorder.warn", lost.sites[0].function)
}

func TestPagesSayWhereAReasonShows(t *testing.T) {
	idx := sampleIndex(t)
	page, err := idx.conditionsPage()
	require.NoError(t, err)
	assert.Contains(t, page, "| `Broken` | `Widget` | The widget is broken. | `<n> widgets are broken: <err> Fix: replace them.` |")
	assert.Contains(t, page, "| `Unused` | — | Declared and never set. | — | declared, never set |")

	idx.packages["pkg/elsewhere"] = idx.packages["pkg/spoke/sample"]
	idx.reasons["pkg/elsewhere.X"] = &reasonDef{value: "X", pkg: "pkg/elsewhere"}
	_, err = idx.conditionsPage()
	assert.ErrorContains(t, err, "pkg/elsewhere declares condition reasons, but hack/docgen's shownOn does not say where")
}

func TestCodeSpansAreSafeInTables(t *testing.T) {
	assert.Equal(t, "`a \\| b`", code("a | b"))
	assert.Equal(t, "`` see `kubectl get` ``", code("see `kubectl get`"))
	assert.Equal(t, "pkghubpullmodel", anchor("pkg/hub/pullmodel"))
}
