package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/api/reasons"
)

var sampleTable = reasons.Table{
	Name: "Widget", ShownOn: "the widget's status", EventsOn: "the widget",
	Conditions: []reasons.Condition{{Type: "Working", Meaning: "The widget works."}},
	Reasons: []reasons.Reason{
		{Name: "Broken", Conditions: []string{"Working"}, Event: reasons.Warning, Meaning: "It | broke.", Fix: "Replace it."},
		{Name: "Fine", Conditions: []string{"Working"}, Meaning: "It works."},
		{Name: "Lost", Event: reasons.Normal, EventOn: "the shelf", Meaning: "It was lost."},
	},
}

func TestConditionsPageListsEachConditionsReasons(t *testing.T) {
	page := conditionsPage([]reasons.Table{sampleTable})
	assert.Contains(t, page, "## Widget\n\nShown on the widget's status.")
	assert.Contains(t, page, "| `Working` | The widget works. | `Broken`, `Fine` |")
	assert.Contains(t, page, "| `Broken` | `Working` | Warning | It \\| broke. | Replace it. |", "a pipe in a cell is escaped")
	assert.Contains(t, page, "| `Fine` | `Working` | — | It works. | — |")
	assert.NotContains(t, page, "`Lost` |", "an Event's reason only is on events.md")
}

func TestEventsPageSaysWhereEachEventIs(t *testing.T) {
	page := eventsPage([]reasons.Table{sampleTable})
	assert.Contains(t, page, "| `Broken` | Warning | the widget | It \\| broke. | Replace it. |")
	assert.Contains(t, page, "| `Lost` | Normal | the shelf | It was lost. | — |")
	assert.NotContains(t, page, "`Fine`", "a reason no Event carries is not listed")
	assert.Less(t, strings.Index(page, "`Broken`"), strings.Index(page, "`Lost`"), "Warnings first")
}

func TestCodeSpansAreSafeInTables(t *testing.T) {
	assert.Equal(t, "`a \\| b`", code("a | b"))
	assert.Equal(t, "`` see `kubectl get` ``", code("see `kubectl get`"))
}

func TestLinksAreMadeRelativeToThePage(t *testing.T) {
	text := "See [concepts](docs/concepts.md#the-routes-trap), [this page](docs/troubleshooting.md#a-clusters-addon) " +
		"and [Argo CD](https://argo-cd.readthedocs.io/)."
	assert.Equal(t, "See [concepts](../concepts.md#the-routes-trap), [this page](../troubleshooting.md#a-clusters-addon) "+
		"and [Argo CD](https://argo-cd.readthedocs.io/).", markdown(text, conditionsPath))
	assert.Equal(t, "See [concepts](concepts.md#the-routes-trap), [this page](#a-clusters-addon) "+
		"and [Argo CD](https://argo-cd.readthedocs.io/).", markdown(text, "docs/troubleshooting.md"))
	assert.Equal(t, "[x](../operations/install.md)", markdown("[x](docs/operations/install.md)", "docs/guides/pull-model.md"))
}

func TestTextsThatWouldNotRenderAreRefused(t *testing.T) {
	table := func(meaning string) []reasons.Table {
		return []reasons.Table{{Name: "Widget", Reasons: []reasons.Reason{{Name: "Broken", Meaning: meaning}}}}
	}
	assert.NoError(t, checkTexts(table("Run `kubectl get managedclusteraddon -n <cluster>`; see [it](docs/concepts.md).")))
	assert.ErrorContains(t, checkTexts(table("Run kubectl get managedclusteraddon -n <cluster>.")), "Widget reason Broken Meaning: a <")
	assert.ErrorContains(t, checkTexts(table("See [it](concepts.md).")), "the link concepts.md")
	assert.NoError(t, checkTexts(table("A ``code span with ` inside <here>`` is code.")))
}

func TestBlocksAreRenderedBetweenTheirMarkers(t *testing.T) {
	page := "# Troubleshooting\n\n## The GitOpsCluster\n\nProse.\n\n" +
		beginMarker + "reasons of the GitOpsCluster; edit me -->\n| a row edited by hand |\n" + endMarker + "\n\nMore prose.\n"
	filled, names, err := fillBlocks(page, "docs/troubleshooting.md")
	require.NoError(t, err)
	assert.Equal(t, []string{"the GitOpsCluster"}, names)
	assert.True(t, strings.HasPrefix(filled, "# Troubleshooting\n\n## The GitOpsCluster\n\nProse.\n\n"+beginMarker+
		"reasons of the GitOpsCluster; edit pkg/api/v1beta1/reasons.go, then make docs -->\n\n| condition | reason |"), filled)
	assert.True(t, strings.HasSuffix(filled, "|\n\n"+endMarker+"\n\nMore prose.\n"), filled)
	assert.NotContains(t, filled, "edited by hand")
	assert.Contains(t, filled, "| any | `ReconcileError` |", "a reason of every condition")
	assert.Contains(t, filled, "| `PlacementResolved` | `PlacementNotFound` |")
	assert.Contains(t, filled, "[concepts](concepts.md#when-a-cluster-leaves)", "links relative to the page")

	again, _, err := fillBlocks(filled, "docs/troubleshooting.md")
	require.NoError(t, err)
	assert.Equal(t, filled, again, "rendering is idempotent")

	_, _, err = fillBlocks(beginMarker+"reasons of the widget -->\n"+endMarker+"\n", "docs/x.md")
	assert.ErrorContains(t, err, `docs/x.md:1: no generated block is named "reasons of the widget"`)
	_, _, err = fillBlocks(beginMarker+"reasons of the GitOpsCluster -->\n| row |\n", "docs/x.md")
	assert.ErrorContains(t, err, "has no "+endMarker)
	_, _, err = fillBlocks("text\n"+endMarker+"\n", "docs/x.md")
	assert.ErrorContains(t, err, "docs/x.md:2:")
}

func TestEveryConditionReasonIsInABlock(t *testing.T) {
	require.NoError(t, checkBlocksCoverTheReasons("../.."))
	agent := reasonBlocks[3].render("docs/troubleshooting.md")
	assert.Contains(t, agent, "`ArgoCDAgentConnected` | `NotConnected`")
	assert.NotContains(t, reasonBlocks[2].render("docs/troubleshooting.md"), "`NotConnected`", "Argo CD Agent mode's own block")
}
