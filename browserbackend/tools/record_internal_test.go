package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/recorder"
)

func TestActionEffectsAreRecordedAsPageEvents(t *testing.T) {
	rec := recorder.New(recorder.Options{})
	_, rc := rec.Begin(t.Context(), "c", "click")
	recordResult(rc, &ActionResult{Effects: Effects{Opened: []string{"https://a.test/popup"},
		Navigated: &ActionNavigation{URL: "https://a.test/next", Title: "Next"}}})
	recordResult(nil, &ActionResult{Effects: Effects{Opened: []string{"https://a.test/ignored"}}})
	rc.End("", nil)
	var events []recorder.PageEvent
	for _, e := range rec.Entries("c") {
		if e.Event != nil {
			events = append(events, *e.Event)
		}
	}
	require.Len(t, events, 2)
	assert.Equal(t, recorder.PageEvent{Type: "popup", URL: "https://a.test/popup"}, events[0])
	assert.Equal(t, recorder.PageEvent{Type: "navigation", URL: "https://a.test/next", Detail: "Next"}, events[1])
}
