package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

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
