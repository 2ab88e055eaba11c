// Package tabs is the one implementation of the extension's tab operations,
// the Vellum.* pseudo-methods of PXY-6 (Vellum.listTabs, selectTab,
// closeTab, createTab, findTab, attach, detach). Each function sends one
// command through a Sender: a hostproxy.Backend, or a per-call
// *browserbackend.Client whose selector routes it to the extension backend.
// Any other backend refuses the method (host-bridge with a policy-class
// not_supported error, PXY-6). Params and result shapes are documented on
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

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// Sender sends one command and returns its CDP result: the Send method of
// browserbackend.ScopedClient and *browserbackend.Client.
type Sender interface {
	Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error)
}

// Tab is one tab as the extension reports it.
type Tab struct {
	ID     int    `json:"id"`
	URL    string `json:"url,omitempty"`
	Title  string `json:"title,omitempty"`
	Active bool   `json:"active,omitempty"`
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
		return &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeInvalidResponse,
			Method: method, Backend: browserbackend.KindExtension, Dispatched: true,
			Message: "unexpected result shape", Err: err}
	}
	return nil
}

type tabID struct {
	TabID int `json:"tabId"`
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
func Select(ctx context.Context, s Sender, id int) error {
	return do(ctx, s, wire.MethodSelectTab, tabID{id}, nil)
}

// Close sends Vellum.closeTab {"tabId"}.
func Close(ctx context.Context, s Sender, id int) error {
	return do(ctx, s, wire.MethodCloseTab, tabID{id}, nil)
}

// Create sends Vellum.createTab {"url","active"} and decodes {"tab":Tab}.
func Create(ctx context.Context, s Sender, url string, active bool) (Tab, error) {
	var out struct {
		Tab Tab `json:"tab"`
	}
	err := do(ctx, s, wire.MethodCreateTab, struct {
		URL    string `json:"url"`
		Active bool   `json:"active"`
	}{url, active}, &out)
	return out.Tab, err
}

// Find sends Vellum.findTab {"url"?,"title"?} (substring matches; an empty
// argument is left out) and decodes {"tab":Tab|null}; found is false when no
// tab matched.
func Find(ctx context.Context, s Sender, url, title string) (tab Tab, found bool, err error) {
	var out struct {
		Tab *Tab `json:"tab"`
	}
	params := struct {
		URL   string `json:"url,omitempty"`
		Title string `json:"title,omitempty"`
	}{url, title}
	if err := do(ctx, s, wire.MethodFindTab, params, &out); err != nil || out.Tab == nil {
		return Tab{}, false, err
	}
	return *out.Tab, true, nil
}

// Attach sends Vellum.attach {"tabId"}: later sessionless commands of the
// sender's client go to that tab.
func Attach(ctx context.Context, s Sender, id int) error {
	return do(ctx, s, wire.MethodAttach, tabID{id}, nil)
}

// Detach sends Vellum.detach {"tabId"}.
func Detach(ctx context.Context, s Sender, id int) error {
	return do(ctx, s, wire.MethodDetach, tabID{id}, nil)
}
