// Package tabs is the one implementation of the extension's tab operations,
// the Vellum.* pseudo-methods (Vellum.listTabs, selectTab, closeTab,
// createTab, findTab, attach, detach). Each function sends one command
// through a Sender: a *hostproxy.ExtensionBackend, or a per-call
// *browserbackend.Client whose selector routes it to the extension backend.
// Any other backend refuses the method (host-bridge with a policy-class
// not_supported error). Params and result shapes are documented on
// each function; they are defined here only, so a change of the extension's
// shapes is made in one place.
//
// Errors are the Sender's, or, for a result that does not decode into the
// documented shape, an *browserbackend.Error of class protocol with code
// invalid_response (the command was dispatched). The functions hold no state
// and are safe for concurrent use as far as the Sender is.
package tabs

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// Sender sends one command and returns its CDP result: the Send method of
// browserbackend.ScopedClient and *browserbackend.Client.
type Sender interface {
	Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error)
}

// Tab is one tab as the extension reports it in Vellum.listTabs:
// {"tabId":<number>,"windowId","url","title","active","pinned"}.
// Vellum.findTab fills ID, URL and Title; Vellum.createTab ID only.
type Tab struct {
	ID       ID     `json:"tabId"`
	WindowID int    `json:"windowId,omitempty"`
	URL      string `json:"url,omitempty"`
	Title    string `json:"title,omitempty"`
	Active   bool   `json:"active,omitempty"`
	Pinned   bool   `json:"pinned,omitempty"`
}

// do sends method with params and decodes a non-empty result into out (when
// out is not nil).
func do(ctx context.Context, s Sender, method string, params, out any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err // the params below always marshal
	}
	res, err := s.Send(ctx, browserbackend.Command{Method: method, Params: raw})
	if err != nil {
		return err
	}
	if out == nil || len(res) == 0 {
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return invalid(method, "unexpected result shape", err)
	}
	return nil
}

func invalid(method, msg string, err error) error {
	return &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeInvalidResponse,
		Method: method, Backend: browserbackend.KindExtension, Dispatched: true, Message: msg, Err: err}
}

type tabID struct {
	TabID ID `json:"tabId"`
}

// List sends Vellum.listTabs {} and decodes {"tabs":[Tab…]}.
func List(ctx context.Context, s Sender) ([]Tab, error) {
	var out struct {
		Tabs []Tab `json:"tabs"`
	}
	err := do(ctx, s, wire.MethodListTabs, struct{}{}, &out)
	return out.Tabs, err
}

// Select sends Vellum.selectTab {"tabId"}.
func Select(ctx context.Context, s Sender, id ID) error {
	return do(ctx, s, wire.MethodSelectTab, tabID{id}, nil)
}

// Close sends Vellum.closeTab {"tabId"}; the answer
// {"closed":true,"tabId","clientId"} carries nothing more.
func Close(ctx context.Context, s Sender, id ID) error {
	return do(ctx, s, wire.MethodCloseTab, tabID{id}, nil)
}

// Create sends Vellum.createTab {"url","active"} and decodes
// {"tabId":"<string>","clientId"}. The real extension opens an
// active about:blank whatever it is given: navigate the tab afterwards. An
// answer without a tab id is a protocol error, code invalid_response.
func Create(ctx context.Context, s Sender, url string, active bool) (Tab, error) {
	var out struct {
		TabID ID `json:"tabId"`
	}
	err := do(ctx, s, wire.MethodCreateTab, struct {
		URL    string `json:"url"`
		Active bool   `json:"active"`
	}{url, active}, &out)
	if err != nil {
		return Tab{}, err
	}
	if out.TabID == 0 {
		return Tab{}, invalid(wire.MethodCreateTab, "answer has no tabId", nil)
	}
	return Tab{ID: out.TabID, URL: "about:blank", Active: true}, nil
}

// Find sends Vellum.findTab {"urlPattern"} and decodes
// {"tabId":"<string>","url","title"}; found is false when the answer
// names no tab or the client answers target_not_found.
func Find(ctx context.Context, s Sender, urlPattern string) (tab Tab, found bool, err error) {
	var out Tab
	err = do(ctx, s, wire.MethodFindTab, struct {
		URLPattern string `json:"urlPattern"`
	}{urlPattern}, &out)
	if errors.Is(err, errTargetNotFound) {
		return Tab{}, false, nil
	}
	if err != nil || out.ID == 0 {
		return Tab{}, false, err
	}
	return out, true, nil
}

var errTargetNotFound = &browserbackend.Error{Code: browserbackend.CodeTargetNotFound}

// Attach sends Vellum.attach {"tabId"} (answer
// {"attached":true,"target":{"tabId"}}): later sessionless commands of the
// sender's client go to that tab.
func Attach(ctx context.Context, s Sender, id ID) error {
	return do(ctx, s, wire.MethodAttach, tabID{id}, nil)
}

// Detach sends Vellum.detach {"tabId"} (answer
// {"detached":true,"target":{"tabId"}}).
func Detach(ctx context.Context, s Sender, id ID) error {
	return do(ctx, s, wire.MethodDetach, tabID{id}, nil)
}
