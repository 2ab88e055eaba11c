package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

// linksReply answers every command of a fake backend; Runtime.evaluate
// with an empty link list, so a links call succeeds.
func linksReply(_ context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	if cmd.Method == "Runtime.evaluate" {
		return json.RawMessage(`{"result":{"type":"object","value":{"url":"http://site.test/","links":[],"total":0}}}`), nil
	}
	return nil, nil
}

// approvalTools returns Tools over one fake local provider whose calls
// wait for approve on the listed actions, and the provider.
func approvalTools(approvals []string, approve tools.ApprovalFunc, rec *recorder.Recorder) (*tools.Tools, *browserbackendtest.Provider) {
	prov := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal),
		NewBackend: func() *browserbackendtest.Backend {
			return browserbackendtest.NewBackend(browserbackend.KindLocal, linksReply)
		}}
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: quietLogger()})
	return tools.New(tools.Options{Selector: sel, Logger: quietLogger(), Approvals: approvals, Approve: approve, Recorder: rec}), prov
}

// approvalEvents returns the approval events of conv's record.
func approvalEvents(rec *recorder.Recorder, conv string) []recorder.PageEvent {
	var out []recorder.PageEvent
	for _, e := range rec.Entries(conv) {
		if e.Type == recorder.TypeEvent && e.Event.Type == "approval" {
			out = append(out, *e.Event)
		}
	}
	return out
}

// An approval granted, denied, not answered before the call's deadline
// and impossible to ask: the call runs only when granted; otherwise it
// fails with its approval code before any backend is asked. Each outcome,
// with who decided, is in the conversation's record, and the approver
// never sees what the call types.
func TestApprovalsGateTheListedActions(t *testing.T) {
	inv := browserbackend.Invocation{ConversationID: "conv-approve", InterfaceID: "cli", ActorPrincipalID: "agent-1"}
	for _, tc := range []struct {
		name     string
		approve  tools.ApprovalFunc
		code     string // "" when the call runs
		outcome  string
		contains string
	}{
		{"granted", func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
			return tools.ApprovalDecision{Approved: true, By: "operator-7"}, nil
		}, "", "approved", "(by operator-7)"},
		{"denied", func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
			return tools.ApprovalDecision{By: "operator-7", Reason: "not today"}, nil
		}, tools.CodeApprovalDenied, "denied", "(by operator-7): not today"},
		{"timed out", func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
			<-ctx.Done() // nobody answers
			return tools.ApprovalDecision{}, ctx.Err()
		}, tools.CodeApprovalTimeout, "timed out", "links"},
		{"approver failed", func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
			return tools.ApprovalDecision{}, errors.New("dashboard unreachable")
		}, tools.CodeApprovalUnavailable, "unavailable", "links"},
		{"no approver", nil, tools.CodeApprovalUnavailable, "unavailable", "links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					mu    sync.Mutex // the approver runs on a goroutine of its own
					asked []tools.ApprovalRequest
				)
				approve := tc.approve
				if approve != nil {
					approve = func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
						mu.Lock()
						asked = append(asked, req)
						mu.Unlock()
						return tc.approve(ctx, req)
					}
				}
				rec := recorder.New(recorder.Options{})
				tl, prov := approvalTools([]string{tools.ApproveLinks, tools.ApproveType}, approve, rec)

				_, err := tl.Read().Links(context.Background(), inv, tools.LinksInput{TimeoutMs: 60_000})
				if tc.code == "" {
					require.NoError(t, err)
					assert.Equal(t, 1, prov.Builds(), "the approved call ran")
				} else {
					require.ErrorIs(t, err, &tools.Error{Code: tc.code, Op: "links"})
					assert.Zero(t, prov.Proposed(), "no backend is asked before the approval")
				}
				if tc.code == tools.CodeApprovalTimeout {
					assert.ErrorIs(t, err, context.DeadlineExceeded)
				}
				synctest.Wait() // the approver has returned
				mu.Lock()
				defer mu.Unlock()
				if approve != nil {
					require.Len(t, asked, 1)
					assert.Equal(t, tools.ApprovalRequest{ConversationID: inv.ConversationID, ActorPrincipalID: "agent-1",
						Action: tools.ApproveLinks, Op: "links", Summary: "links"}, asked[0])
				}
				ev := approvalEvents(rec, inv.ConversationID)
				require.Len(t, ev, 1)
				assert.Equal(t, tc.outcome, ev[0].Handled)
				assert.Contains(t, ev[0].Detail, tc.contains)

				// An action not listed runs without asking.
				_, err = tl.Read().Extract(context.Background(), inv, tools.ExtractInput{})
				assert.NotErrorIs(t, err, &tools.Error{Code: tc.code})
				assert.Len(t, approvalEvents(rec, inv.ConversationID), 1)
			})
		})
	}
}

// A gated type asks with the target and never the text; a refusal of the
// input's own checks comes first and asks nothing.
func TestApprovalRequestNamesTheTargetNotTheText(t *testing.T) {
	var asked []tools.ApprovalRequest
	tl, prov := approvalTools([]string{tools.ApproveType}, func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
		asked = append(asked, req)
		return tools.ApprovalDecision{By: "op"}, nil
	}, nil)
	inv := browserbackend.Invocation{ConversationID: "conv-type", InterfaceID: "cli"}
	_, err := tl.Act().Type(context.Background(), inv, tools.TypeInput{Target: tools.Target{Ref: "e12"}, Text: "s3cret words"})
	require.ErrorIs(t, err, tools.ErrApprovalDenied)
	assert.Contains(t, err.Error(), "op denied it")
	require.Len(t, asked, 1)
	assert.Equal(t, "type", asked[0].Action)
	assert.Equal(t, "ref e12", asked[0].Target)
	assert.Equal(t, "type ref e12", asked[0].Summary)
	assert.NotContains(t, asked[0].Summary+asked[0].Target, "s3cret")

	_, err = tl.Act().Type(context.Background(), inv, tools.TypeInput{Text: "x"})
	require.ErrorIs(t, err, tools.ErrInvalidInput)
	assert.Len(t, asked, 1, "an invalid input is refused before anyone is asked")
	assert.Zero(t, prov.Proposed())
}

// A ctx approver (as the MCP server installs) overrides Options.Approve.
func TestWithApproverOverridesTheOptionsApprover(t *testing.T) {
	tl, _ := approvalTools([]string{tools.ApproveLinks}, func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
		return tools.ApprovalDecision{By: "options"}, nil
	}, nil)
	ctx := tools.WithApprover(context.Background(), func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
		return tools.ApprovalDecision{Approved: true, By: "ctx"}, nil
	})
	_, err := tl.Read().Links(ctx, browserbackend.Invocation{ConversationID: "c", InterfaceID: "cli"}, tools.LinksInput{})
	require.NoError(t, err)
}

// Approvals takes the seed's action names; an unknown one is
// validation_failed, and New panics with that error.
func TestApprovalsRefuseAnUnknownAction(t *testing.T) {
	assert.Equal(t, []string{"act", "click", "extract", "goto", "links", "login", "observe", "save_context",
		"screenshot", "signup", "type"}, tools.ApprovalActions())
	require.NoError(t, tools.CheckApprovals(tools.ApprovalActions()))
	err := tools.CheckApprovals([]string{"goto", "navigate"})
	require.ErrorIs(t, err, tools.ErrValidationFailed)
	assert.Contains(t, err.Error(), `"navigate"`)
	assert.PanicsWithError(t, err.Error(), func() { approvalTools([]string{"goto", "navigate"}, nil, nil) })
}
