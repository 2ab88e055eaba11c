package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/local"
)

// A host application makes one Tools over its selector and calls a method per
// tool call. Here the selector's only provider is a fake local backend that
// answers the links script, declared as the local kind (its modes and
// aliases); a real application passes the reference providers (hostproxy,
// cdpinspect, local).
func ExampleReadTools_Links() {
	page := browserbackendtest.JSON(map[string]any{"result": map[string]any{"type": "object", "value": map[string]any{
		"url":   "http://127.0.0.1:8080/",
		"links": []map[string]string{{"href": "http://127.0.0.1:8080/docs", "text": "Docs"}},
		"total": 1,
	}}})
	prov := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: &local.Descriptor, NewBackend: func() *browserbackendtest.Backend {
		return browserbackendtest.NewBackend(browserbackend.KindLocal, page)
	}}
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: quietLogger()})
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger()})
	inv := browserbackend.Invocation{ConversationID: "conv-1", InterfaceID: "cli"}

	res, err := tl.Read().Links(context.Background(), inv, tools.LinksInput{Contains: "docs", BrowserMode: "Playwright"})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Backend, res.Total, res.Links[0].Href, res.Links[0].Text)

	// An unknown browser_mode is refused before anything is sent.
	_, err = tl.Read().Links(context.Background(), inv, tools.LinksInput{BrowserMode: "chrome"})
	fmt.Println(errors.Is(err, tools.ErrInvalidMode), prov.Builds())
	// Output:
	// local 1 http://127.0.0.1:8080/docs Docs
	// true 1
}

// Status is the browser_status tool's data: which backends can serve the
// invocation, in which order, and what a person could do about the others.
func ExampleStatus() {
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: quietLogger(), Providers: []browserbackend.Provider{
		&browserbackendtest.Provider{K: browserbackend.KindExtension, Desc: &hostproxy.ExtensionDescriptor, Skip: browserbackend.CodeNoClient},
		&browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: &local.Descriptor},
	}})
	rep, _ := tools.Status(context.Background(), sel, browserbackend.Invocation{ConversationID: "conv-1"}, tools.StatusOptions{})
	ext, _ := rep.Backend(browserbackend.KindExtension)
	fmt.Println("auto order:", rep.AutoOrder)
	fmt.Println("recommended:", rep.RecommendedMode)
	fmt.Println("extension:", ext.Available, ext.VerifiedBy, ext.Code)
	raw, _ := json.Marshal(rep.UserActions)
	fmt.Println(len(raw) > 2)
	// Output:
	// auto order: [local]
	// recommended: local
	// extension: false preflight no_client
	// true
}

// Options.Approvals names the actions that wait for the operator; the
// approver answers each with who decided. A denied call fails
// approval_denied before any backend is asked.
func ExampleOptions_approvals() {
	prov := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: &local.Descriptor}
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: quietLogger()})
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger(),
		Approvals: []string{tools.ApproveGoto, tools.ApproveClick},
		Approve: func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
			fmt.Println("asked:", req.Action, "-", req.Summary)
			return tools.ApprovalDecision{Approved: false, By: "operator-7", Reason: "not that site"}, nil
		}})
	inv := browserbackend.Invocation{ConversationID: "conv-1", InterfaceID: "cli"}

	_, err := tl.Navigate(context.Background(), inv, tools.NavigateInput{URL: "https://shop.example/checkout"})
	fmt.Println(errors.Is(err, tools.ErrApprovalDenied), prov.Proposed())
	fmt.Println(err)
	// Output:
	// asked: goto - navigate https://shop.example/checkout
	// true 0
	// tools: navigate: approval_denied: operator-7 denied it: not that site
}
