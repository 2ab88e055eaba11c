package eventhub

import (
	"context"
	"encoding/json"
	"time"
)

// Capability is a host-proxy capability a client's interface grants.
type Capability string

// The host-proxy capabilities.
const (
	CapHostBash       Capability = "host_bash"
	CapHostFile       Capability = "host_file"
	CapHostCU         Capability = "host_cu"
	CapHostAppControl Capability = "host_app_control"
	CapHostBrowser    Capability = "host_browser"
	CapHostUISnapshot Capability = "host_ui_snapshot"
)

// ClientInfo describes a registered client.
type ClientInfo struct {
	ClientID     string       `json:"clientId"`
	InterfaceID  string       `json:"interfaceId"`
	Capabilities []Capability `json:"capabilities"`
	// ActorPrincipalID is the authenticated actor the client belongs to.
	ActorPrincipalID string    `json:"actorPrincipalId,omitempty"`
	MachineName      string    `json:"machineName,omitempty"`
	ConnectedAt      time.Time `json:"connectedAt"`
	// LastActive moves on what the client does: registration, a
	// result post (Touch), a ping that acknowledges a heartbeat it read.
	// Never on what the server writes.
	LastActive time.Time `json:"lastActive"`
	// Healthy is false once the client has shown no activity for the hub's
	// unhealthy-after window (default 3 heartbeat intervals, 21 s).
	// An unhealthy client stays registered (its stream may still be open)
	// but Roster lists it after every healthy client.
	Healthy bool `json:"healthy"`
}

// Has reports whether the client holds capability c.
func (c ClientInfo) Has(cap Capability) bool {
	for _, x := range c.Capabilities {
		if x == cap {
			return true
		}
	}
	return false
}

// Envelope is the JSON carried in an SSE frame's data:
// {id, conversationId, emittedAt, seq, message}.
type Envelope struct {
	ID             string          `json:"id"`
	ConversationID string          `json:"conversationId,omitempty"`
	EmittedAt      time.Time       `json:"emittedAt"`
	Seq            uint64          `json:"seq"`
	Message        json.RawMessage `json:"message"`
}

// Target selects the recipients of a published event. Normally exactly
// one of ClientID, Capability, InterfaceID, ConversationID is set; when several
// are set a stream must match all of them. A Target with none of them set is
// rejected with ErrEmptyTarget.
//
// Matching rules of the in-process hub:
//   - ClientID: the stream registered under that client id.
//   - Capability: registered clients whose interface grants it.
//   - InterfaceID: registered clients with that interface id.
//   - ConversationID: streams (registered or plain) opened without a
//     conversation filter or with that conversation id.
//   - ActorPrincipalID (optional, a restriction): only streams whose
//     authenticated actor equals it.
type Target struct {
	ClientID       string
	Capability     Capability
	InterfaceID    string
	ConversationID string
	// ActorPrincipalID restricts delivery to one actor's streams. It is not a
	// selector on its own: set it together with one of the fields above.
	ActorPrincipalID string
	// ReplayUntil, when not zero, ends the event's replay eligibility at
	// that instant: a stream that registers later never receives it
	// in its replay. Live delivery is not affected. A publisher that waits
	// for an answer sets it to its deadline and calls Hub.Retract when it
	// stops waiting earlier. It is plain data, so it means the same in a
	// hub that spans processes.
	ReplayUntil time.Time
	// CorrelationID, optional, names the exchange an event starts (a
	// request id) for a hub that spans processes: a ClientID target with
	// ReplayUntil and a CorrelationID may have its delivery confirmed by
	// the reply that comes back under the same id (see natshub.Hub.Send).
	// It is opaque to every hub; the in-process hub ignores it.
	CorrelationID string
}

// Hub is the event hub abstraction. The in-process implementation is
// the default; a distributed one can implement the same interface. All
// methods are safe for concurrent use. The hub never interprets a message:
// what it does with an event (recipients, replay eligibility) comes from the
// Target and Retract calls of its publisher.
type Hub interface {
	// Publish sends message (marshalled to JSON) to the target's clients and
	// returns the envelope id. It never blocks on a recipient. A
	// ClientID target that is not connected fails at once with
	// ErrNotConnected; a Capability or InterfaceID target with no recipient
	// at all is ErrNoRecipients; an empty target is ErrEmptyTarget; a
	// message that does not marshal is an error wrapping the marshal error;
	// after the hub is closed, ErrClosed. A ConversationID target with no
	// current subscriber succeeds: the event is kept for replay.
	// ctx bounds the publish itself (an in-process hub only checks it).
	Publish(ctx context.Context, target Target, conversationID string, message any) (string, error)
	// Retract ends the replay eligibility of a published event (envelopeID
	// as returned by Publish) before its Target.ReplayUntil: no registration
	// that starts after Retract returns receives it in its replay.
	// Live delivery already made is not undone. Retract is linearizable with
	// registrations: each registration's replay is decided wholly before or
	// wholly after it.
	//
	// For an event published to one client (Target.ClientID), held reports
	// whether that client's current registration, under the actor of the
	// publish, holds the event: it was queued to that registration live or
	// in its replay, or the registration resumed with a Last-Event-ID at or
	// after it. A publisher waiting for an answer calls Retract when the
	// target's registration ends (Gone) and keeps waiting only when held is
	// true, so a client never runs a request whose caller has already
	// failed. Retract is idempotent. held is false for an unknown
	// id, for an event that is neither in the replay ring nor before its
	// ReplayUntil, and after Close. The error is ctx's, or a failure to
	// record the retraction in a hub that spans processes (then the event
	// may still be replayed until its ReplayUntil).
	Retract(ctx context.Context, envelopeID string) (held bool, err error)
	// Roster returns the connected clients, most recently active first.
	Roster() []ClientInfo
	// Client returns one connected client.
	Client(clientID string) (ClientInfo, bool)
	// Touch records activity by the client (a result post, a ping).
	Touch(clientID string)
	// Changed returns a channel closed at the next roster change (register,
	// unregister, shed).
	Changed() <-chan struct{}
	// Gone returns a channel closed when the client's current registration
	// ends (disconnect, replacement, shed); it is already closed when the
	// client is not connected. On replacement (a reconnect with the
	// same client id) the new registration is in place before the old
	// channel closes, so a waiter that wants to survive a reconnect can
	// check Client(clientID) and wait on Gone(clientID) again.
	Gone(clientID string) <-chan struct{}
}
