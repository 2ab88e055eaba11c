package hostproxy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unsafe"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// Request sends one command to a client and waits for its result. The client
// is req.TargetClientID when set, else the most recently active eligible
// one (host_browser-capable, of req.SourceActor when set, on req.Route),
// chrome-extension clients before desktop bridges; Vellum.* methods go to
// chrome-extension clients only. It returns the CDP result object, or an
// *browserbackend.Error:
//   - ClassPolicy, code invalid_params, when req.Params is neither empty,
//     null nor one JSON object (nothing was sent);
//   - ClassTransport, code no_client, when no client is eligible, and
//     ClassProtocol, code extension_required, when a Vellum.* method finds
//     no chrome-extension client (nothing was sent; no failover);
//   - ClassTransport when publishing fails (logged), when the target client
//     disconnects or is shed while the request is in flight (at once), or
//     when the client reports a transport-class code or a non-JSON result.
//     A target that has already reconnected under the same client id and
//     actor when the proxy sees the disconnect, and whose new registration
//     holds the request (the hub's replay brought it, or the client resumed
//     past it), is not a failure: the request keeps waiting on that
//     registration. The request is published with its deadline as
//     Target.ReplayUntil and retracted (Hub.Retract) before any failure is
//     returned, so a request whose caller failed is never replayed to a
//     later reconnect;
//   - ClassProtocol for a CDP error the client reports (numeric code) or
//     another string code;
//   - ClassTimeout when the timeout (req.Timeout, else the proxy default)
//     or ctx's deadline passes, ClassAborted when ctx is cancelled; in both
//     cases a host_browser_cancel goes to the target client only;
//   - ClassClosed after Close.
//
// A successful result shares memory with the decoded result body instead of
// copying it: it must not be modified in place.
func (p *Proxy) Request(ctx context.Context, req Req) (json.RawMessage, error) {
	if p.closed() {
		return nil, p.errorf(req, browserbackend.ClassClosed, browserbackend.CodeClosed, false, "proxy is closed")
	}
	if ctx.Err() != nil {
		// Never sent: a timeout says so, with what the client it would
		// have gone to is doing.
		e := browserbackend.ContextError(ctx, req.Method, false)
		e.Backend = req.Backend
		if e.Class == browserbackend.ClassTimeout {
			e.Diagnostics = &browserbackend.Diagnostics{}
			if client, err := p.choose(req); err == nil {
				e.Diagnostics = p.diagnostics(client)
			}
		}
		return nil, e
	}
	if err := browserbackend.CheckParams(req.Method, req.Params); err != nil {
		return nil, p.errorf(req, browserbackend.ClassPolicy, browserbackend.CodeInvalidParams, false, "%s", err.Message)
	}
	client, err := p.choose(req)
	if err != nil {
		return nil, err
	}
	return p.send(ctx, req, client)
}

func (p *Proxy) send(ctx context.Context, req Req, client eventhub.ClientInfo) (json.RawMessage, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = p.timeout
	}
	deadline := time.Now().Add(timeout)
	dl, ctxFirst := ctx.Deadline()
	if ctxFirst = ctxFirst && dl.Before(deadline); ctxFirst {
		deadline = dl
	}
	id := p.newID()
	e := newCall(Interaction{
		RequestID:      id,
		Kind:           KindHostBrowser,
		ConversationID: req.ConversationID,
		TargetClientID: client.ClientID,
		TargetActor:    client.ActorPrincipalID,
	}, p.now())
	if err := p.calls.add(e); err != nil {
		if errors.Is(err, errProxyClosed) {
			return nil, p.errorf(req, browserbackend.ClassClosed, browserbackend.CodeClosed, false, "proxy is closed")
		}
		return nil, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeTransportError, false, "register request: %v", err)
	}

	gone := p.hub.Gone(client.ClientID)
	msg := RequestMessage{
		Type:           wire.TypeHostBrowserRequest,
		RequestID:      id,
		ConversationID: req.ConversationID,
		CDPMethod:      req.Method,
		CDPParams:      req.Params,
		CDPSessionID:   req.SessionID,
		TimeoutSeconds: timeout.Seconds(),
	}
	if ctxFirst {
		// Tell the client the deadline that will actually apply.
		msg.TimeoutSeconds = max(time.Until(deadline), time.Millisecond).Seconds()
	}
	if len(msg.CDPParams) == 0 || string(msg.CDPParams) == "null" {
		msg.CDPParams = nil
	}
	// The request is eligible for a reconnect's replay until its deadline at
	// most; every way out below retracts it first (see Hub.Retract).
	envID, err := p.hub.Publish(ctx, eventhub.Target{ClientID: client.ClientID, ReplayUntil: deadline, CorrelationID: id}, req.ConversationID, msg)
	if err != nil {
		p.calls.take(e)
		p.log.Warn("host_browser_request publish failed",
			"requestId", id, "clientId", client.ClientID, "interfaceId", client.InterfaceID,
			"method", req.Method, "error", err)
		e := p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeTransportError, false,
			"publish to client %q failed", client.ClientID)
		e.Err = err
		return nil, e
	}
	defer p.retract(envID, id)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case res := <-e.result:
			p.diag.note(client.ClientID, p.now())
			out, err := p.classify(req, res)
			p.describeTimeout(err, client, e)
			return out, err
		case <-gone:
			next, res, ok := p.onGone(envID, e)
			if next != nil {
				// The client reconnected and its new registration holds the
				// request: keep waiting, now on that registration's end.
				p.log.Debug("host_browser_request target client reconnected; still waiting",
					"requestId", id, "clientId", client.ClientID)
				gone = next
				continue
			}
			if ok {
				return p.classify(req, res)
			}
			p.log.Warn("host_browser_request target client went away",
				"requestId", id, "clientId", client.ClientID, "method", req.Method)
			return nil, p.errorf(req, browserbackend.ClassTransport, browserbackend.CodeTransportError, true,
				"client %q disconnected while the request was in flight", client.ClientID)
		case <-timer.C:
			diag := p.diagnostics(client) // while this request is still pending
			if res, ok := p.abandon(envID, e); ok {
				return p.classify(req, res)
			}
			p.cancel(id, client.ClientID, "timeout")
			err := p.errorf(req, browserbackend.ClassTimeout, browserbackend.CodeTimeout, true,
				"no result from client %q within %s", client.ClientID, timeout)
			err.Diagnostics = diag
			return nil, err
		case <-ctx.Done():
			diag := p.diagnostics(client)
			if res, ok := p.abandon(envID, e); ok {
				return p.classify(req, res)
			}
			p.cancel(id, client.ClientID, "caller")
			err := browserbackend.Classify(ctx.Err(), true)
			err.Method, err.Backend = req.Method, req.Backend
			if err.Class == browserbackend.ClassTimeout {
				err.Diagnostics = diag
			}
			return nil, err
		case <-e.failed:
			// Close removed the call unanswered.
			p.retract(envID, id)
			p.cancel(id, client.ClientID, "proxy closed")
			return nil, p.errorf(req, browserbackend.ClassClosed, browserbackend.CodeClosed, true, "proxy is closed")
		}
	}
}

// describeTimeout gives a client's timeout answer (err, of request e: the
// wire code timeout, a transport error) the client's diagnostics,
// e counted among the requests in flight as it was until its answer.
func (p *Proxy) describeTimeout(err error, client eventhub.ClientInfo, e *call) {
	var be *browserbackend.Error
	if !errors.As(err, &be) || be.Code != browserbackend.CodeTimeout || be.Diagnostics != nil {
		return
	}
	d := p.diagnostics(client)
	d.InFlight++
	if !e.sent.IsZero() {
		d.OldestInFlight = max(d.OldestInFlight, p.now().Sub(e.sent))
	}
	be.Diagnostics = d
}

// diagnostics describes what client is doing for this Proxy, so a timeout
// says something a person can act on: the requests in flight to it,
// the oldest one's age, the time since it last delivered a result (its
// connection's age when it has not) and the age of its connection
// (ClientInfo.ConnectedAt).
func (p *Proxy) diagnostics(client eventhub.ClientInfo) *browserbackend.Diagnostics {
	now := p.now()
	d := &browserbackend.Diagnostics{}
	if !client.ConnectedAt.IsZero() {
		d.Uptime = now.Sub(client.ConnectedAt)
	}
	d.InFlight, d.OldestInFlight = p.calls.inFlight(client.ClientID, now)
	d.SinceLastAnswer = d.Uptime
	if t, ok := p.diag.last(client.ClientID); ok && (client.ConnectedAt.IsZero() || !t.Before(client.ConnectedAt)) {
		d.SinceLastAnswer = now.Sub(t)
	}
	return d
}

// onGone decides, when the target's registration has ended, whether the
// request fails or keeps waiting. It takes the target's current Gone channel
// first and then retracts the request: the hub answers whether the client's
// current registration holds the request, and a registration that starts
// after the retraction never receives it in a replay. So:
//   - held, and still pending: keep waiting on that channel (if the
//     registration it belongs to was replaced meanwhile, it is already
//     closed and the next round decides again);
//   - otherwise the entry is removed (the caller fails, transport) and no
//     later reconnect replays the request.
//
// No interleaving both fails the caller and replays the request. A result
// delivered first is returned with ok true, as abandon does.
func (p *Proxy) onGone(envID string, e *call) (next <-chan struct{}, res ResultBody, ok bool) {
	clientID := e.in.TargetClientID
	next = p.hub.Gone(clientID)
	held := p.retract(envID, e.in.RequestID)
	if held && p.calls.isPending(e) {
		return next, ResultBody{}, false
	}
	res, ok = p.calls.take(e)
	return nil, res, ok
}

// retract ends the replay eligibility of the request published as envID
// and reports whether the target's current registration holds it. A hub
// error is logged and counts as not held.
func (p *Proxy) retract(envID, requestID string) bool {
	// The request's own context may be done; the retraction gets a short one.
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	held, err := p.hub.Retract(ctx, envID)
	if err != nil {
		p.log.Warn("host_browser_request retract failed; a reconnect may still replay it until its deadline",
			"requestId", requestID, "error", err)
		return false
	}
	return held
}

// abandon ends the request on the caller's side: it removes the pending
// entry and retracts the request before the caller sees its error. When the
// result route got there first it returns that result with ok true; an entry
// resolved by the host app (Resolve) yields ok false instead of a wait that
// never ends.
func (p *Proxy) abandon(envID string, e *call) (ResultBody, bool) {
	res, ok := p.calls.take(e)
	if !ok {
		p.retract(envID, e.in.RequestID)
	}
	return res, ok
}

// cancel tells the target client, and only it, to stop working on id.
func (p *Proxy) cancel(id, clientID, why string) {
	// The request's own context may be done; the cancel gets a short one.
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_, err := p.hub.Publish(ctx, eventhub.Target{ClientID: clientID}, "", CancelMessage{Type: wire.TypeHostBrowserCancel, RequestID: id})
	if err != nil {
		p.log.Warn("host_browser_cancel publish failed", "requestId", id, "clientId", clientID, "why", why, "error", err)
		return
	}
	p.log.Debug("host_browser_cancel sent", "requestId", id, "clientId", clientID, "why", why)
}

// classify turns a client's result into the CDP result or a typed error
// (see ClassifyResult).
func (p *Proxy) classify(req Req, res ResultBody) (json.RawMessage, error) {
	if !res.IsError && len(res.Content) > 0 {
		// res.Content was decoded from this client's body for this request
		// and nothing else refers to it, so the result can share its bytes
		// instead of copying them (a screenshot is tens of MB). Same outcome
		// as ClassifyResult; anything it would refuse goes there.
		view := unsafe.Slice(unsafe.StringData(res.Content), len(res.Content))
		if validJSON(view) {
			return json.RawMessage(view), nil
		}
	}
	return ClassifyResult(req.Method, req.Backend, res.Content, res.IsError)
}

// ClassifyResult applies the wire contract to a result's content:
//   - success: content must be JSON (else ClassTransport/invalid_response);
//     an empty content means an empty result object;
//   - error with a string code from the transport set (transport_error,
//     unreachable, timeout, non_loopback, cdp_session_not_found, cancelled,
//     target_crashed): ClassTransport with that code (a client's own
//     timeout is a transport error; it carries the client's diagnostics);
//   - error with a numeric code: ClassProtocol with that CDP code, the
//     innermost one when the message holds another CDP error;
//   - error with the string code page_lost (the client's tab crashed
//     before the command; a navigation revives it): ClassClosed, not
//     dispatched;
//   - error with another string code: ClassProtocol with that code;
//   - error in plain text: ClassProtocol with target_not_found,
//     forbidden_target or client_error (ParseErrorAnswer): the
//     client answered, so there is no failover;
//   - an error object without a usable code: ClassTransport/invalid_response.
func ClassifyResult(method string, backend browserbackend.Kind, content string, isError bool) (json.RawMessage, error) {
	mk := func(class browserbackend.Class, code, msg string) *browserbackend.Error {
		return &browserbackend.Error{Class: class, Code: code, Method: method, Backend: backend, Dispatched: true, Message: msg}
	}
	if !isError {
		if strings.TrimSpace(content) == "" {
			return json.RawMessage(`{}`), nil
		}
		if !json.Valid([]byte(content)) {
			return nil, mk(browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, "client returned a result that is not JSON")
		}
		return json.RawMessage(content), nil
	}
	ans := ParseErrorAnswer(content)
	switch {
	case ans.Malformed:
		return nil, mk(browserbackend.ClassTransport, browserbackend.CodeInvalidResponse, "client returned an error without a usable code")
	case ans.HasCDPCode:
		e := browserbackend.ProtocolError(ans.CDPCode, ans.Message)
		e.Method, e.Backend, e.Dispatched = method, backend, true
		return nil, e
	case IsTransportCode(ans.StringCode):
		return nil, mk(browserbackend.ClassTransport, ans.StringCode, ans.Message)
	case ans.StringCode == browserbackend.CodePageLost:
		// The client's tab crashed before the command: not sent, and not
		// a failover (another browser would not have the conversation's
		// page either); a navigation revives the tab.
		e := mk(browserbackend.ClassClosed, ans.StringCode, ans.Message)
		e.Dispatched = false
		return nil, e
	}
	return nil, mk(browserbackend.ClassProtocol, ans.StringCode, ans.Message)
}
