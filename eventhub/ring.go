package eventhub

import "time"

// ringEntry is one recorded event and the rule that picks its recipients.
type ringEntry struct {
	frame  *frame
	target Target
	// clientActor is the actor of the ClientID target at publish time: a
	// stream of another actor reusing that client id never receives it.
	clientActor string
	at          time.Time
	// until is Target.ReplayUntil: zero for no expiry.
	until time.Time
	// retracted is set by Retract: the entry is never replayed again.
	retracted bool
	// evicted is set when the entry left the ring; it stays known to
	// Retract (byID) while its ReplayUntil has not passed.
	evicted bool
	// replayedTo is the serial of the last stream whose replay included it.
	replayedTo uint64
}

// replayable reports whether the entry may still go into a replay at now.
func (e *ringEntry) replayable(now time.Time) bool {
	return !e.retracted && (e.until.IsZero() || !now.After(e.until))
}

// matches reports whether stream s is a recipient of the entry (see Target).
func (e *ringEntry) matches(s *stream) bool {
	t := e.target
	if t.ClientID != "" {
		if !s.registered || s.info.ClientID != t.ClientID || s.actor != e.clientActor {
			return false
		}
	}
	if t.Capability != "" && (!s.registered || !s.info.Has(t.Capability)) {
		return false
	}
	if t.InterfaceID != "" && (!s.registered || s.info.InterfaceID != t.InterfaceID) {
		return false
	}
	if t.ConversationID != "" && s.conversation != "" && s.conversation != t.ConversationID {
		return false
	}
	if t.ClientID == "" && t.Capability == "" && t.InterfaceID == "" && t.ConversationID == "" {
		return false
	}
	if t.ActorPrincipalID != "" && s.actor != t.ActorPrincipalID {
		return false
	}
	return true
}

// ring is the bounded replay buffer: a FIFO bounded by count, bytes
// and age. Guarded by InProcess.mu.
type ring struct {
	limits  ReplayLimits
	entries []*ringEntry // oldest first; head at index start
	start   int
	bytes   int
	// evictedSeq is the highest seq that has left the ring.
	evictedSeq uint64
	// onEvict, when set, is called for each entry leaving the ring.
	onEvict func(*ringEntry)
}

func (r *ring) len() int { return len(r.entries) - r.start }

func (r *ring) add(e *ringEntry) {
	if r.limits.Count < 0 {
		r.evictedSeq = e.frame.seq
		r.evict(e)
		return
	}
	r.entries = append(r.entries, e)
	r.bytes += len(e.frame.data)
	r.trim(e.at)
}

// trim drops entries beyond the bounds, oldest first, and compacts the slice
// so its backing array stays proportional to the live entries.
func (r *ring) trim(now time.Time) {
	for r.len() > 0 {
		head := r.entries[r.start]
		if r.len() <= r.limits.Count && r.bytes <= r.limits.Bytes && now.Sub(head.at) <= r.limits.Age {
			break
		}
		r.bytes -= len(head.frame.data)
		r.evictedSeq = head.frame.seq
		r.evict(head)
		r.entries[r.start] = nil
		r.start++
	}
	if r.start > 64 && r.start*2 >= len(r.entries) {
		n := copy(r.entries, r.entries[r.start:])
		clear(r.entries[n:])
		r.entries = r.entries[:n]
		r.start = 0
	}
}

func (r *ring) evict(e *ringEntry) {
	e.evicted = true
	if r.onEvict != nil {
		r.onEvict(e)
	}
}

// since returns the frames after seq that match keep, oldest first, and
// whether events after seq were already evicted (a gap).
func (r *ring) since(seq uint64, now time.Time, keep func(*ringEntry) bool) ([]*frame, bool) {
	r.trim(now)
	var out []*frame
	for _, e := range r.entries[r.start:] {
		if e.frame.seq > seq && keep(e) {
			out = append(out, e.frame)
		}
	}
	return out, r.evictedSeq > seq
}
