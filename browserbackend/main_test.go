package browserbackend_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.uber.org/goleak"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Actors and hub clients used across the tests.
const (
	alice = "actor-alice"
	bob   = "actor-bob"
)

var (
	aliceExt    = hostproxytest.HubClient{ID: "ext-alice", InterfaceID: hostproxytest.InterfaceChromeExtension, Actor: alice}
	aliceMac    = hostproxytest.HubClient{ID: "mac-alice", InterfaceID: hostproxytest.InterfaceMacOS, Actor: alice}
	bobExt      = hostproxytest.HubClient{ID: "ext-bob", InterfaceID: hostproxytest.InterfaceChromeExtension, Actor: bob}
	bobMac      = hostproxytest.HubClient{ID: "mac-bob", InterfaceID: hostproxytest.InterfaceMacOS, Actor: bob}
	evalCommand = bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1+1"}`)}
)

// rig wires the reference providers over a fake roster and farm, with a log
// recorder and a cooldown store the test can inspect.
type rig struct {
	roster *hostproxytest.Roster
	farm   *bbt.Farm
	cfg    cdpinspect.Config
	logs   *bbt.LogRecorder
	cool   *bb.Cooldowns
	sel    *bb.Selector
}

// newRig returns a rig with the default config and the given clients; call
// build (optionally after changing cfg) to make the selector.
func newRig(clients ...hostproxytest.HubClient) *rig {
	r := &rig{roster: hostproxytest.NewRoster(clients...), farm: &bbt.Farm{}, cfg: cdpinspect.DefaultConfig(), cool: &bb.Cooldowns{}}
	return r
}

func (r *rig) ref() hostproxytest.Reference {
	return hostproxytest.Reference{Roster: r.roster, Config: r.cfg, Farm: r.farm}
}

// build makes the selector from o, filling Providers (reference order),
// Logger and Cooldowns when unset.
func (r *rig) build(o bb.Options) *rig {
	if o.Providers == nil {
		o.Providers = r.ref().Providers()
	}
	var log = o.Logger
	if log == nil {
		r.logs, log = bbt.NewLogRecorder()
		o.Logger = log
	}
	if o.Cooldowns == nil {
		o.Cooldowns = r.cool
	} else {
		r.cool = o.Cooldowns
	}
	r.sel = bb.NewSelector(o)
	return r
}

// send opens a client for inv, sends evalCommand and registers Close.
func (r *rig) send(t *testing.T, inv bb.Invocation) (*bb.Client, error) {
	t.Helper()
	c := r.sel.Client(inv)
	t.Cleanup(func() { c.Close() })
	_, err := c.Send(context.Background(), evalCommand)
	return c, err
}

// plan returns the kinds sel would try for inv now.
func (r *rig) plan(inv bb.Invocation) []bb.Kind { return r.sel.Plan(inv).Kinds() }

func kinds(ks ...bb.Kind) []bb.Kind { return ks }

// summary renders attempts as kind@stage[code] for compact assertions.
func summary(as []bb.Attempt) []string { return bb.AttemptSummary(as) }

// messages returns the log messages recorded, in order.
func messages(l *bbt.LogRecorder) []string {
	var out []string
	for _, r := range l.Records() {
		out = append(out, r.Message)
	}
	return out
}

func countMsg(l *bbt.LogRecorder, msg string) int { return len(l.Find(msg)) }

// tried renders the attempts past candidate selection (built candidates).
func tried(as []bb.Attempt) []string {
	var out []bb.Attempt
	for _, a := range as {
		if a.Stage != bb.StageCandidateSelection {
			out = append(out, a)
		}
	}
	return bb.AttemptSummary(out)
}
