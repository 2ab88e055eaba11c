package eventhub

import "errors"

// Sentinel errors of the hub. Compare with errors.Is; returned errors may wrap
// them with detail.
var (
	// ErrNotConnected: a ClientID target has no open stream. Returned
	// at once, never after a wait.
	ErrNotConnected = errors.New("eventhub: client not connected")
	// ErrNoRecipients: a Capability or InterfaceID target matched no stream.
	ErrNoRecipients = errors.New("eventhub: no recipients")
	// ErrEmptyTarget: a Target with no selector field set.
	ErrEmptyTarget = errors.New("eventhub: empty target")
	// ErrClosed: the hub was closed.
	ErrClosed = errors.New("eventhub: hub closed")
	// ErrCapacity: the subscriber cap is 0, so no stream may open.
	ErrCapacity = errors.New("eventhub: subscriber capacity is zero")
	// ErrActorMismatch: a stream or ping for a client id that belongs to
	// another actor.
	ErrActorMismatch = errors.New("eventhub: client belongs to another actor")
	// ErrInvalidEventID: a Last-Event-ID value that this hub did not issue
	// in a shape it can parse.
	ErrInvalidEventID = errors.New("eventhub: invalid event id")
	// ErrFrameTooLarge: ReadFrames met a line longer than its limit.
	ErrFrameTooLarge = errors.New("eventhub: sse frame too large")
	// ErrInvalidHeader: a client id, interface id or machine name header
	// that is too long or holds control characters.
	ErrInvalidHeader = errors.New("eventhub: invalid header value")
)
