package tools_test

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/browserchain/browserchain/internal/chromiumtest"
)

func TestZZExpShotAfterChange(t *testing.T) {
	page := `<!doctype html><title>f</title><form><label>Display name <input id=n></label><button type=button id=b onclick="document.getElementById('out').textContent='Applied: '+document.getElementById('n').value">Apply</button></form><p id=out></p>`
	srv := chromiumtest.FixtureServer(t, map[string]string{"/form": page})
	b := chromiumtest.Start(t)
	raw := dialRaw(t, b)
	var ct struct{ TargetID string `json:"targetId"` }
	json.Unmarshal(raw.call("Target.createTarget", map[string]any{"url": srv.URL + "/form"}, ""), &ct)
	var att struct{ SessionID string `json:"sessionId"` }
	json.Unmarshal(raw.call("Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, ""), &att)
	S := att.SessionID
	raw.call("Target.activateTarget", map[string]any{"targetId": ct.TargetID}, "")
	shot := func() time.Duration {
		t0 := time.Now()
		raw.call("Page.captureScreenshot", map[string]any{"format": "png", "optimizeForSpeed": true}, S)
		return time.Since(t0)
	}
	var now, settled, nochange []time.Duration
	for i := 0; i < 12; i++ {
		raw.call("Runtime.evaluate", map[string]any{"expression": `document.getElementById('n').value='x` + string(rune('a'+i)) + `'; document.getElementById('b').click(); 1`}, S)
		now = append(now, shot())
		raw.call("Runtime.evaluate", map[string]any{"expression": `document.getElementById('n').value='y` + string(rune('a'+i)) + `'; document.getElementById('b').click(); 1`}, S)
		time.Sleep(300 * time.Millisecond)
		settled = append(settled, shot())
		nochange = append(nochange, shot())
	}
	med := func(d []time.Duration) time.Duration { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }); return d[len(d)/2] }
	t.Logf("capture right after a change: %v; 300 ms after: %v; again with no change: %v", med(now), med(settled), med(nochange))
	t.Logf("%v\n%v\n%v", now, settled, nochange)
}
