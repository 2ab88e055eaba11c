package natshub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/browserchain/browserchain/eventhub"
)

// Header names of the hub's NATS messages.
const (
	hdrXfer        = "Bc-Xfer"
	hdrPart        = "Bc-Part"
	hdrParts       = "Bc-Parts"
	hdrError       = "Bc-Error"
	hdrID          = "Bc-Id"
	hdrReplica     = "Bc-Replica"
	hdrClient      = "Bc-Client"
	hdrActor       = "Bc-Actor"
	hdrConv        = "Bc-Conv"
	hdrUntil       = "Bc-Until"
	hdrTarget      = "Bc-Target"
	hdrReg         = "Bc-Reg"
	hdrTActor      = "Bc-Target-Actor"
	hdrCorrelation = "Bc-Correlation-Id"
)

// headerRoom is what a message's headers may take of the broker's
// max_payload; the rest of each part is payload.
const headerRoom = 8 << 10

// xferTTL is how long an incomplete chunked transfer is kept.
const xferTTL = time.Minute

// partsInFlight bounds the parts of a chunked transfer sent before the
// receiver confirms them: every partsInFlight-th part is a request the
// receiver answers (about 8 MiB in flight with the default max_payload, well
// under the broker's per-connection pending limit).
const partsInFlight = 8

// request sends payload to subj as one request, or, when it does not fit in
// the broker's max_payload, as a sequence of parts: plain
// publishes, except every partsInFlight-th part, a request the receiver
// answers once it holds all parts so far (flow control), and the last one,
// answered by the receiver's real reply. An answer carrying hdrError is
// returned as an error with that code; a bad part is reported at the next
// answered one.
func request(ctx context.Context, nc *nats.Conn, subj string, hdr nats.Header, payload []byte) (*nats.Msg, error) {
	part := int(nc.MaxPayload()) - headerRoom
	if part <= 0 {
		part = 1 << 10
	}
	if len(payload) <= part {
		m := &nats.Msg{Subject: subj, Header: hdr, Data: payload}
		return checkReply(nc.RequestMsgWithContext(ctx, m))
	}
	n := (len(payload) + part - 1) / part
	id := nuid.Next()
	for i := 0; i < n; i++ {
		h := nats.Header{}
		for k, v := range hdr {
			h[k] = v
		}
		h.Set(hdrXfer, id)
		h.Set(hdrPart, strconv.Itoa(i))
		h.Set(hdrParts, strconv.Itoa(n))
		m := &nats.Msg{Subject: subj, Header: h, Data: payload[i*part : min((i+1)*part, len(payload))]}
		if i < n-1 && (i+1)%partsInFlight != 0 {
			if err := nc.PublishMsg(m); err != nil {
				return nil, err
			}
			continue
		}
		reply, err := checkReply(nc.RequestMsgWithContext(ctx, m))
		if err != nil || i == n-1 {
			return reply, err
		}
	}
	panic("unreachable")
}

// codeError is an error answer of another replica.
type codeError struct{ code, msg string }

func (e *codeError) Error() string { return "natshub: remote: " + e.code + ": " + e.msg }

func checkReply(m *nats.Msg, err error) (*nats.Msg, error) {
	if err != nil {
		return nil, err
	}
	if c := m.Header.Get(hdrError); c != "" {
		return m, &codeError{code: c, msg: string(m.Data)}
	}
	return m, nil
}

// assembler joins the parts of chunked transfers arriving on one
// subscription (messages of one subscription are handled one at a time).
type assembler struct {
	mu    sync.Mutex
	parts map[string]*partial
	max   int
}

type partial struct {
	buf  []byte
	next int
	at   time.Time
}

var errXfer = errors.New("natshub: chunked transfer out of order or too large")

// add takes one message: a whole one is returned as is (done true); a part
// is acknowledged and kept, and the last part returns the joined message.
// A part out of order or beyond max bytes drops the transfer and is
// answered with an error.
func (a *assembler) add(m *nats.Msg) (*nats.Msg, bool) {
	id := m.Header.Get(hdrXfer)
	if id == "" {
		return m, true
	}
	i, err1 := strconv.Atoi(m.Header.Get(hdrPart))
	n, err2 := strconv.Atoi(m.Header.Get(hdrParts))
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.parts == nil {
		a.parts = make(map[string]*partial)
	}
	now := time.Now()
	for k, p := range a.parts {
		if now.Sub(p.at) > xferTTL {
			delete(a.parts, k)
		}
	}
	p := a.parts[id]
	if p == nil && i == 0 && err2 == nil && n > 0 {
		// Every part but the last is as large as the first: one allocation
		// for the whole transfer (bounded by max).
		p = &partial{buf: make([]byte, 0, min(n*len(m.Data), a.max))}
		a.parts[id] = p
	}
	if err1 != nil || err2 != nil || p == nil || i != p.next || len(p.buf)+len(m.Data) > a.max {
		delete(a.parts, id)
		respondError(m, "bad_transfer", errXfer.Error())
		return nil, false
	}
	p.buf = append(p.buf, m.Data...)
	p.next++
	p.at = now
	if p.next < n {
		if m.Reply != "" {
			_ = m.Respond(nil)
		}
		return nil, false
	}
	delete(a.parts, id)
	m.Data = p.buf
	return m, true
}

func respondError(m *nats.Msg, code, msg string) {
	if m.Reply == "" {
		return
	}
	r := nats.NewMsg(m.Reply)
	r.Header.Set(hdrError, code)
	r.Data = []byte(msg)
	_ = m.RespondMsg(r)
}

func errf(format string, args ...any) error { return fmt.Errorf("natshub: "+format, args...) }

// setTarget puts a client target in hdr as plain headers (client id, actor
// filter, ReplayUntil in Unix nanoseconds): no JSON on the delivery path. A
// target with other fields set goes as JSON in hdrTarget.
func setTarget(hdr nats.Header, t eventhub.Target) {
	if t.Capability != "" || t.InterfaceID != "" || t.ConversationID != "" {
		tj, _ := json.Marshal(t)
		hdr.Set(hdrTarget, string(tj))
		return
	}
	hdr.Set(hdrClient, t.ClientID)
	if t.ActorPrincipalID != "" {
		hdr.Set(hdrTActor, t.ActorPrincipalID)
	}
	if !t.ReplayUntil.IsZero() {
		hdr.Set(hdrUntil, strconv.FormatInt(t.ReplayUntil.UnixNano(), 10))
	}
}

// getTarget reads what setTarget wrote.
func getTarget(hdr nats.Header) (eventhub.Target, error) {
	var t eventhub.Target
	if tj := hdr.Get(hdrTarget); tj != "" {
		err := json.Unmarshal([]byte(tj), &t)
		return t, err
	}
	t.ClientID = hdr.Get(hdrClient)
	t.ActorPrincipalID = hdr.Get(hdrTActor)
	if u := hdr.Get(hdrUntil); u != "" {
		ns, err := strconv.ParseInt(u, 10, 64)
		if err != nil {
			return t, errf("bad %s header %q", hdrUntil, u)
		}
		t.ReplayUntil = time.Unix(0, ns)
	}
	return t, nil
}
