package hostproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// Transport names how a result reached the Proxy, in ResultReceipt.
type Transport string

// The result transports.
const (
	TransportHTTP      Transport = "http"
	TransportWebSocket Transport = "websocket"
	// TransportRemote: a remote device socket (package hostproxy/remote).
	TransportRemote Transport = "remote"
)

// ResultReceipt describes one result that passed the checks, for
// Options.OnResult.
type ResultReceipt struct {
	RequestID string
	// ClientID is the posting client (the X-Vellum-Client-Id header, or the
	// client id the socket is bound to).
	ClientID  string
	Transport Transport
	// Raw is the body or socket message as received. It is only valid
	// during the call and must not be modified; it may carry fields the
	// proxy ignores (the reference extension's timings, for example).
	Raw []byte
}

// refusal is why a result or event was refused: the HTTP status and error
// code the matching POST route answers, and a message that names no
// credential.
type refusal struct {
	status int
	code   string
	msg    string
}

func (r *refusal) Error() string { return "hostproxy: " + r.code + ": " + r.msg }

// acceptResult runs the result checks on a decoded result sent by clientID
// (empty when the post named none) acting for actor, and delivers it: the
// one path of the result route, the result socket and the client frames.
// A result whose request is not pending here goes to the relay, when there
// is one. nil means accepted; a refused result leaves its request pending.
func (p *Proxy) acceptResult(body ResultBody, clientID, actor string, tr Transport, raw []byte) *refusal {
	if p.relay != nil {
		if _, ok := p.calls.Lookup(body.RequestID); !ok {
			// The caller may wait on another replica. The content leaves
			// unescaped, over raw's bytes.
			body.resolve()
			if rej, ok := p.relayResult(body, clientID, actor, tr); ok {
				return rej
			}
			raw = nil // resolve wrote over it
		}
	}
	return p.acceptChecked(body, clientID, actor, tr, raw, true)
}

// acceptChecked checks a result against its pending interaction and hands
// it over:
//   - 404 unknown_request: not pending (unknown or already answered), or
//     nobody waits for it here;
//   - 409 wrong_kind: the interaction is not host_browser;
//   - 400 missing_client_id: no client named for a targeted request;
//   - 403 client_mismatch, wrong_actor: another client or actor than the
//     request's target (client_mismatch is also the code of a body or
//     frame naming another client than its credential's).
//
// An accepted result counts as activity of the client when touch is set
// (false leaves that to the replica that relayed it).
func (p *Proxy) acceptChecked(body ResultBody, clientID, actor string, tr Transport, raw []byte, touch bool) *refusal {
	in, ok := p.calls.Lookup(body.RequestID)
	if !ok {
		return &refusal{http.StatusNotFound, "unknown_request",
			fmt.Sprintf("no pending request %q (unknown or already answered)", body.RequestID)}
	}
	if in.Kind != KindHostBrowser {
		return &refusal{http.StatusConflict, "wrong_kind",
			fmt.Sprintf("request %q is a %s interaction, not host_browser", body.RequestID, in.Kind)}
	}
	if in.TargetClientID != "" {
		if clientID == "" {
			return &refusal{http.StatusBadRequest, "missing_client_id",
				fmt.Sprintf("%s header is required for a targeted request", wire.HeaderClientID)}
		}
		if clientID != in.TargetClientID {
			return &refusal{http.StatusForbidden, "client_mismatch",
				fmt.Sprintf("request %q was not sent to this client", body.RequestID)}
		}
	}
	if in.TargetActor != "" && actor != in.TargetActor {
		return &refusal{http.StatusForbidden, "wrong_actor",
			fmt.Sprintf("request %q belongs to another actor", body.RequestID)}
	}
	if p.onResult != nil {
		p.onResult(ResultReceipt{RequestID: body.RequestID, ClientID: clientID, Transport: tr, Raw: raw})
	}
	body.resolve() // after OnResult: it decodes over raw's bytes
	if !p.calls.deliver(body) {
		return &refusal{http.StatusNotFound, "unknown_request",
			fmt.Sprintf("no pending request %q (unknown or already answered)", body.RequestID)}
	}
	if touch && clientID != "" {
		p.hub.Touch(clientID)
	}
	return nil
}

// failTooLarge fails request id, named by a result refused as larger than
// the cap, with payload_too_large at once, after the checks of any result:
// the caller learns the command ran but its answer is lost, instead of
// waiting out its timeout. It reports whether a request failed.
func (p *Proxy) failTooLarge(id, clientID, actor string, tr Transport) bool {
	content := errorContent(browserbackend.CodePayloadTooLarge,
		fmt.Sprintf("the client's result exceeded the server's limit of %d bytes", p.maxBody))
	if rej := p.acceptResult(ResultBody{RequestID: id, Content: content, IsError: true}, clientID, actor, tr, nil); rej != nil {
		p.log.Debug("oversized result names no request of this client", "requestId", id, "clientId", clientID, "code", rej.code)
		return false
	}
	return true
}

func errorContent(code, msg string) string {
	raw, _ := json.Marshal(ErrorContent{Code: json.RawMessage(strconv.Quote(code)), Message: msg})
	return string(raw)
}
