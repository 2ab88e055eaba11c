package eventhub

import (
	"context"
	"fmt"
)

// Subscription is a stream opened in process, without HTTP (Subscribe): the
// same registration, targeting, bounded queue, shedding and replay as an SSE
// stream, read with Next. It has no heartbeats, so a registered client's
// liveness moves only through Touch. Next is not safe for concurrent use;
// Close and Done are.
type Subscription struct {
	h *InProcess
	s *stream
}

// Subscribe opens an in-process stream: with a ClientID it
// registers a client exactly as the events route does (replacing an open
// stream of the same client id and actor), otherwise it is a plain
// conversation subscriber. Errors: ErrClosed, ErrCapacity (cap 0),
// ErrActorMismatch, ErrInvalidHeader (a field too long or with control
// characters), or a missing InterfaceID with a ClientID.
func (h *InProcess) Subscribe(req SubscribeRequest) (*Subscription, error) {
	for _, v := range []string{req.ClientID, req.InterfaceID, req.MachineName, req.ConversationID} {
		if err := validHeaderValue(v); err != nil {
			return nil, err
		}
	}
	if req.ClientID != "" && req.InterfaceID == "" {
		return nil, fmt.Errorf("%w: interface id is required with a client id", ErrInvalidHeader)
	}
	s, err := h.subscribe(req)
	if err != nil {
		return nil, err
	}
	return &Subscription{h: h, s: s}, nil
}

// Next returns the next event's envelope: replayed events first, then live
// ones. It returns ctx.Err() when ctx ends first, and an error wrapping
// ErrNotConnected (with the end reason) once the subscription has ended
// and its queue is drained.
func (sub *Subscription) Next(ctx context.Context) (Envelope, error) {
	var f *frame
	if len(sub.s.replay) > 0 {
		f, sub.s.replay = sub.s.replay[0], sub.s.replay[1:]
	} else {
		select {
		case f = <-sub.s.queue:
		case <-ctx.Done():
			return Envelope{}, ctx.Err()
		case <-sub.s.done:
			select {
			case f = <-sub.s.queue:
			default:
				return Envelope{}, fmt.Errorf("%w: subscription ended: %s", ErrNotConnected, sub.reason())
			}
		}
	}
	sub.s.delivered.Add(1)
	return f.envelope(), nil
}

func (sub *Subscription) reason() EndReason {
	sub.h.mu.Lock()
	defer sub.h.mu.Unlock()
	return sub.s.endReason
}

// Done is closed when the subscription ends (Close, replacement, shed,
// Unregister, hub Close).
func (sub *Subscription) Done() <-chan struct{} { return sub.s.done }

// Close ends the subscription (EndDisconnected). Idempotent.
func (sub *Subscription) Close() { sub.h.end(sub.s, EndDisconnected, "") }
