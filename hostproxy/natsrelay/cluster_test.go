package natsrelay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/natsrelay"
	"github.com/browserchain/browserchain/internal/natstest"
)

const actor = "alice"

// replica is one runtime replica: a hub on the shared broker, its proxy,
// and a real loopback HTTP server with the events, ping and result routes.
type replica struct {
	name  string
	nc    *nats.Conn
	hub   *natshub.Hub
	proxy *hostproxy.Proxy
	srv   *httptest.Server
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startReplica(t *testing.T, url, name string, hb time.Duration) *replica {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.Name(name))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hub, err := natshub.New(ctx, nc, name, natshub.WithHeartbeat(hb), natshub.WithLogger(quiet()))
	require.NoError(t, err)
	proxy := natsrelay.NewProxy(hub, hostproxy.Options{Logger: quiet(), DefaultTimeout: time.Minute})
	mux := http.NewServeMux()
	mux.Handle(wire.PathEvents, hub.EventsHandler())
	mux.Handle(wire.PathPing, hub.PingHandler())
	proxy.Mount(mux)
	srv := httptest.NewServer(eventhubtest.ActorFromHeader(mux))
	r := &replica{name: name, nc: nc, hub: hub, proxy: proxy, srv: srv}
	t.Cleanup(func() {
		proxy.Close()
		_ = hub.Close()
		srv.CloseClientConnections()
		srv.Close()
		nc.Close()
	})
	return r
}

// crash makes the replica vanish as a killed process would: its broker
// connection and its client connections drop, without any goodbye.
func (r *replica) crash() {
	r.nc.Close()
	r.srv.CloseClientConnections()
}

func cluster(t *testing.T, hb time.Duration) (*natstest.Server, [3]*replica) {
	t.Helper()
	srv := natstest.Start(t)
	var rs [3]*replica
	for i, n := range []string{"a", "b", "c"} {
		rs[i] = startReplica(t, srv.URL(), n, hb)
	}
	return srv, rs
}

func dial(t *testing.T, r *replica, clientID, lastEventID string) *eventhubtest.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := eventhubtest.Dial(ctx, r.srv.URL+wire.PathEvents, eventhubtest.DialOptions{
		ClientID: clientID, InterfaceID: wire.InterfaceChromeExtension, LastEventID: lastEventID,
		Header: eventhubtest.ActorHeader(actor),
	})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// waitListed waits until hub's roster lists clientID (listed) or not.
func waitListed(t *testing.T, h eventhub.Hub, clientID string, listed bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ch := h.Changed()
		if _, ok := h.Client(clientID); ok == listed {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("client %q listed=%v never observed", clientID, listed)
		}
	}
}

func next(t *testing.T, s *eventhubtest.Stream) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env, err := s.NextEvent(ctx)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(env.Message, &m))
	return m
}

type outcome struct {
	res json.RawMessage
	err error
}

func request(p *hostproxy.Proxy, ctx context.Context, clientID string) chan outcome {
	out := make(chan outcome, 1)
	go func() {
		res, err := p.Request(ctx, hostproxy.Req{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1+1"}`),
			TargetClientID: clientID, Backend: browserbackend.KindExtension})
		out <- outcome{res, err}
	}()
	return out
}

func wait(t *testing.T, ch chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(2 * time.Minute):
		t.Fatal("request never returned")
		return outcome{}
	}
}

func postResult(t *testing.T, r *replica, clientID, who, requestID, content string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(hostproxy.ResultBody{RequestID: requestID, Content: content})
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+wire.PathHostBrowserResult, bytes.NewReader(body))
	req.Header.Set(wire.HeaderClientID, clientID)
	req.Header.Set(eventhubtest.TestActorHeader, who)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error.Code
}

func requireClass(t *testing.T, err error, class browserbackend.Class) {
	t.Helper()
	var be *browserbackend.Error
	require.True(t, errors.As(err, &be), "error %v is not a *browserbackend.Error", err)
	require.Equal(t, class, be.Class, "error %v", err)
}

func TestPublishOnAReachesClientSubscribedToB(t *testing.T) {
	_, rs := cluster(t, time.Second)
	a, b := rs[0], rs[1]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	info, ok := a.hub.Client("ext-1")
	require.True(t, ok)
	require.Equal(t, actor, info.ActorPrincipalID)
	require.True(t, info.Has(eventhub.CapHostBrowser))

	_, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "conv-1", map[string]string{"hello": "from a"})
	require.NoError(t, err)
	require.Equal(t, "from a", next(t, s)["hello"])
}

func TestPublishToClientConnectedNowhereFailsAtOnce(t *testing.T) {
	_, rs := cluster(t, time.Second)
	_, err := rs[0].hub.Publish(context.Background(), eventhub.Target{ClientID: "nobody"}, "", map[string]string{})
	require.ErrorIs(t, err, eventhub.ErrNotConnected)
	_, err = rs[0].hub.Publish(context.Background(), eventhub.Target{ClientID: "nobody", ReplayUntil: time.Now().Add(time.Minute)}, "", map[string]string{})
	require.ErrorIs(t, err, eventhub.ErrNotConnected)
}

func TestResultPostedToWrongReplicaReachesCallerAndForeignPostsAreRefused(t *testing.T) {
	_, rs := cluster(t, time.Second)
	a, b, c := rs[0], rs[1], rs[2]
	s := dial(t, b, "ext-1", "")
	other := dial(t, c, "ext-2", "")
	_ = other
	waitListed(t, a.hub, "ext-1", true)
	waitListed(t, c.hub, "ext-2", true)

	out := request(a.proxy, context.Background(), "ext-1")
	msg := next(t, s)
	require.Equal(t, wire.TypeHostBrowserRequest, msg["type"])
	id := msg["requestId"].(string)

	// Another client and another actor are refused with PXY-4's codes,
	// decided on A where the request waits, and the request stays pending.
	code, ec := postResult(t, c, "ext-2", actor, id, `{"result":{}}`)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "client_mismatch", ec)
	code, ec = postResult(t, c, "ext-1", "mallory", id, `{"result":{}}`)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "wrong_actor", ec)

	code, _ = postResult(t, c, "ext-1", actor, id, `{"result":{"type":"number","value":2}}`)
	require.Equal(t, http.StatusOK, code)
	o := wait(t, out)
	require.NoError(t, o.err)
	require.JSONEq(t, `{"result":{"type":"number","value":2}}`, string(o.res))

	code, ec = postResult(t, c, "ext-1", actor, id, `{}`)
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "unknown_request", ec)
}

func TestCancelOnAReachesOnlyTargetOnB(t *testing.T) {
	_, rs := cluster(t, time.Second)
	a, b := rs[0], rs[1]
	target := dial(t, b, "ext-1", "")
	bystander := dial(t, b, "ext-2", "")
	waitListed(t, a.hub, "ext-1", true)
	waitListed(t, a.hub, "ext-2", true)

	ctx, cancel := context.WithCancel(context.Background())
	out := request(a.proxy, ctx, "ext-1")
	req := next(t, target)
	cancel()
	o := wait(t, out)
	requireClass(t, o.err, browserbackend.ClassAborted)
	cm := next(t, target)
	require.Equal(t, wire.TypeHostBrowserCancel, cm["type"])
	require.Equal(t, req["requestId"], cm["requestId"])

	// The bystander's next event is a marker published after the cancel:
	// the cancel never reached it.
	_, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-2"}, "", map[string]string{"type": "marker"})
	require.NoError(t, err)
	require.Equal(t, "marker", next(t, bystander)["type"])
}

func TestClientLeavingBFailsRequestOnAAtOnce(t *testing.T) {
	_, rs := cluster(t, time.Second)
	a, b := rs[0], rs[1]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	out := request(a.proxy, context.Background(), "ext-1")
	next(t, s)
	s.Close()
	o := wait(t, out)
	requireClass(t, o.err, browserbackend.ClassTransport)
	require.Contains(t, o.err.Error(), "disconnected")
}

func TestKilledReplicaFailsRequestsToItsClientsWithinBound(t *testing.T) {
	_, rs := cluster(t, 100*time.Millisecond)
	a, b := rs[0], rs[1]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	out := request(a.proxy, context.Background(), "ext-1") // timeout: one minute
	next(t, s)
	b.crash()
	o := wait(t, out)
	requireClass(t, o.err, browserbackend.ClassTransport)
	waitListed(t, a.hub, "ext-1", false)
}

func TestReconnectToCWithLastEventIDDeliversGapEventOnce(t *testing.T) {
	// A long heartbeat: the crash is not detected during the test, so the
	// roster still lists the client on B while it moves to C.
	_, rs := cluster(t, time.Hour)
	a, b, c := rs[0], rs[1], rs[2]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	_, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "first"})
	require.NoError(t, err)
	require.Equal(t, "first", next(t, s)["type"])
	last := s.LastEventID

	b.crash()
	gapID, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1", ReplayUntil: time.Now().Add(time.Minute)},
		"", map[string]string{"type": "gap"})
	require.NoError(t, err)
	retracted, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1", ReplayUntil: time.Now().Add(time.Minute)},
		"", map[string]string{"type": "retracted"})
	require.NoError(t, err)
	held, err := a.hub.Retract(context.Background(), retracted)
	require.NoError(t, err)
	require.False(t, held)

	s2 := dial(t, c, "ext-1", last)
	require.Equal(t, "gap", next(t, s2)["type"])
	waitListed(t, a.hub, "ext-1", true)
	// The client's registration on C holds the gap event.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		ch := a.hub.Changed()
		if _, ok := c.hub.Local().Client("ext-1"); ok {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("client never registered on C")
		}
	}
	held, err = a.hub.Retract(context.Background(), gapID)
	require.NoError(t, err)
	require.True(t, held)
	_, err = a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "marker"})
	require.NoError(t, err)
	require.Equal(t, "marker", next(t, s2)["type"], "the gap event came twice or the retracted one was replayed")
}

func TestBrokerRestartResyncsRosterWithoutDuplicates(t *testing.T) {
	srv, rs := cluster(t, 200*time.Millisecond)
	a, b, c := rs[0], rs[1], rs[2]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	_, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "before"})
	require.NoError(t, err)
	require.Equal(t, "before", next(t, s)["type"])

	var back []chan nats.Status
	for _, r := range rs {
		back = append(back, r.nc.StatusChanged(nats.CONNECTED))
	}
	srv.Restart()
	for i, ch := range back {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("replica %s never reconnected", rs[i].name)
		}
		rs[i].nc.RemoveStatusListener(ch)
	}
	// A client that appears after the restart is seen on A: A's watcher was
	// recreated; B's client is still listed on every replica.
	dial(t, c, "ext-2", "")
	waitListed(t, a.hub, "ext-2", true)
	waitListed(t, a.hub, "ext-1", true)
	waitListed(t, c.hub, "ext-1", true)

	out := request(a.proxy, context.Background(), "ext-1")
	msg := next(t, s)
	require.Equal(t, wire.TypeHostBrowserRequest, msg["type"])
	code, _ := postResult(t, b, "ext-1", actor, msg["requestId"].(string), `{"ok":true}`)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, wait(t, out).err)
	_, err = a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "marker"})
	require.NoError(t, err)
	require.Equal(t, "marker", next(t, s)["type"], "a request was delivered twice")
}

func TestTenMegabyteResultAcrossReplicasArrivesIntact(t *testing.T) {
	_, rs := cluster(t, time.Second)
	a, b, c := rs[0], rs[1], rs[2]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	out := request(a.proxy, context.Background(), "ext-1")
	msg := next(t, s)
	data := strings.Repeat("iVBORw0KGgoAAAANSUhEUgAA", (10<<20)/24+1)
	content, _ := json.Marshal(map[string]string{"data": data})
	code, _ := postResult(t, c, "ext-1", actor, msg["requestId"].(string), string(content))
	require.Equal(t, http.StatusOK, code)
	o := wait(t, out)
	require.NoError(t, o.err)
	require.Equal(t, len(content), len(o.res))
	require.True(t, bytes.Equal(content, o.res))
}

// process is a replica running as a child process of the test binary.
type process struct {
	cmd *exec.Cmd
	url string
}

// startReplicaProcess runs replica name as a separate process (the test
// binary in replica mode) and returns its base URL; cleanup kills its
// process group.
func startReplicaProcess(t *testing.T, brokerURL, name string, hb time.Duration) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+brokerURL, replicaNameEnv+"="+name, replicaHBEnv+"="+hb.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd}
	t.Cleanup(p.kill)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "replica process did not start")
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	require.True(t, ok, "unexpected replica output %q", line)
	p.url = "http://" + addr
	return p
}

// kill sends SIGKILL to the replica's process group and reaps it.
// Idempotent.
func (p *process) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func dialURL(t *testing.T, base, clientID, lastEventID string) *eventhubtest.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := eventhubtest.Dial(ctx, base+wire.PathEvents, eventhubtest.DialOptions{
		ClientID: clientID, InterfaceID: wire.InterfaceChromeExtension, LastEventID: lastEventID,
		Header: eventhubtest.ActorHeader(actor),
	})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestKilledReplicaProcessFailsRequestThenClientResumesOnC(t *testing.T) {
	broker := natstest.Start(t)
	a := startReplica(t, broker.URL(), "a", 100*time.Millisecond)
	c := startReplica(t, broker.URL(), "c", 100*time.Millisecond)
	b := startReplicaProcess(t, broker.URL(), "b", 100*time.Millisecond)
	s := dialURL(t, b.url, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)

	_, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "first"})
	require.NoError(t, err)
	require.Equal(t, "first", next(t, s)["type"])
	last := s.LastEventID
	out := request(a.proxy, context.Background(), "ext-1") // timeout: one minute
	old := next(t, s)
	require.Equal(t, wire.TypeHostBrowserRequest, old["type"])
	b.kill()
	// B is gone within (DeadAfter+1) heartbeats: the request fails with a
	// transport error, not its timeout.
	o := wait(t, out)
	requireClass(t, o.err, browserbackend.ClassTransport)
	waitListed(t, a.hub, "ext-1", false)

	// The client resumes on C with its Last-Event-ID: the failed request
	// (retracted when its caller failed) is not replayed, and requests
	// reach it there.
	s2 := dial(t, c, "ext-1", last)
	waitListed(t, a.hub, "ext-1", true)
	out = request(a.proxy, context.Background(), "ext-1")
	msg := next(t, s2)
	require.Equal(t, wire.TypeHostBrowserRequest, msg["type"])
	require.NotEqual(t, old["requestId"], msg["requestId"], "the failed request was replayed")
	code, _ := postResult(t, c, "ext-1", actor, msg["requestId"].(string), `{"ok":true}`)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, wait(t, out).err)
}

func post(t *testing.T, r *replica, path, clientID string, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+path, strings.NewReader(body))
	req.Header.Set(wire.HeaderClientID, clientID)
	req.Header.Set(eventhubtest.TestActorHeader, actor)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestEventsAndInvalidationsPostedToCReachBackendOnA(t *testing.T) {
	_, rs := cluster(t, time.Second)
	a, b, c := rs[0], rs[1], rs[2]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	waitListed(t, c.hub, "ext-1", true)
	be := a.proxy.NewExtensionBackend(browserbackend.Invocation{ActorPrincipalID: actor, TargetClientID: "ext-1"}, hostproxy.BackendOptions{})
	defer be.Close()
	done := make(chan error, 1)
	go func() {
		_, err := be.Send(context.Background(), browserbackend.Command{Method: "Page.enable"})
		done <- err
	}()
	msg := next(t, s) // binds the backend to ext-1
	code, _ := postResult(t, b, "ext-1", actor, msg["requestId"].(string), `{}`)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, <-done)

	loads, stop := be.Subscribe("Page.loadEventFired")
	defer stop()
	detached, stop2 := be.Subscribe(browserbackend.MethodTargetDetached)
	defer stop2()
	require.Equal(t, http.StatusOK, post(t, c, wire.PathHostBrowserEvent, "ext-1", `{"method":"Page.loadEventFired","params":{"timestamp":1}}`))
	require.Equal(t, http.StatusOK, post(t, c, wire.PathHostBrowserSessionInvalidated, "ext-1", `{"sessionId":"S1","reason":"tab closed"}`))
	for _, ch := range []<-chan browserbackend.Event{loads, detached} {
		select {
		case ev := <-ch:
			require.NotEmpty(t, ev.Method)
		case <-time.After(20 * time.Second):
			t.Fatal("event posted to C never reached the backend on A")
		}
	}
}

// A client that reconnects to the same replica with a Last-Event-ID before
// two requests it was sent live gets again only the one its publisher still
// awaits, once: the local ring does not replay them on its own, and the
// retracted one is refused by its publisher.
func TestReconnectToSameReplicaReplaysOnlyWhatThePublisherStillAwaits(t *testing.T) {
	_, rs := cluster(t, time.Hour)
	a, b := rs[0], rs[1]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	_, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "first"})
	require.NoError(t, err)
	require.Equal(t, "first", next(t, s)["type"])
	last := s.LastEventID

	until := time.Now().Add(time.Minute)
	awaited, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1", ReplayUntil: until},
		"", map[string]string{"type": "awaited"})
	require.NoError(t, err)
	retracted, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1", ReplayUntil: until},
		"", map[string]string{"type": "retracted"})
	require.NoError(t, err)
	held, err := a.hub.Retract(context.Background(), retracted)
	require.NoError(t, err)
	require.True(t, held, "the registration that received it live holds it")

	s2 := dial(t, b, "ext-1", last) // replaces the first stream on B
	require.Equal(t, "awaited", next(t, s2)["type"])
	held, err = a.hub.Retract(context.Background(), awaited)
	require.NoError(t, err)
	require.True(t, held, "the new registration holds the replayed request")
	_, err = a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "marker"})
	require.NoError(t, err)
	require.Equal(t, "marker", next(t, s2)["type"], "the awaited request came twice or the retracted one was replayed")
}

// Nobody waits for the requests of a publisher that is gone: a reconnect
// does not replay them, while another publisher's request still awaited is
// replayed.
func TestReconnectDoesNotReplayRequestsOfAGonePublisher(t *testing.T) {
	_, rs := cluster(t, time.Hour)
	a, b, c := rs[0], rs[1], rs[2]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	waitListed(t, c.hub, "ext-1", true)
	_, err := b.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "first"})
	require.NoError(t, err)
	require.Equal(t, "first", next(t, s)["type"])
	last := s.LastEventID
	until := time.Now().Add(time.Minute)
	_, err = a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1", ReplayUntil: until}, "", map[string]string{"type": "orphan"})
	require.NoError(t, err)
	require.Equal(t, "orphan", next(t, s)["type"])
	_, err = c.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1", ReplayUntil: until}, "", map[string]string{"type": "awaited"})
	require.NoError(t, err)
	require.Equal(t, "awaited", next(t, s)["type"])
	a.crash()

	s2 := dial(t, b, "ext-1", last)
	require.Equal(t, "awaited", next(t, s2)["type"], "a request of the gone publisher was replayed")
}

// A request still awaited is written to the replay stream after a later
// event (append order is not delivery order): a client that resumes on
// another replica after both is not sent it again.
func TestResumeAfterBothDoesNotReplayAnAwaitedRequestWrittenLater(t *testing.T) {
	srv, rs := cluster(t, time.Hour)
	a, b, c := rs[0], rs[1], rs[2]
	watch, err := nats.Connect(srv.URL())
	require.NoError(t, err)
	t.Cleanup(watch.Close)
	logged := make(chan string, 16)
	_, err = watch.Subscribe(natshub.DefaultPrefix+".log.>", func(m *nats.Msg) { logged <- m.Header.Get("Bc-Id") })
	require.NoError(t, err)
	require.NoError(t, watch.Flush())

	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	awaited, err := a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1", ReplayUntil: time.Now().Add(time.Minute)},
		"", map[string]string{"type": "awaited"})
	require.NoError(t, err)
	require.Equal(t, "awaited", next(t, s)["type"])
	_, err = a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "later"})
	require.NoError(t, err)
	require.Equal(t, "later", next(t, s)["type"])
	last := s.LastEventID
	for id := ""; id != awaited; {
		select {
		case id = <-logged:
		case <-time.After(20 * time.Second):
			t.Fatal("the awaited request was never written to the replay stream")
		}
	}

	s.Close()
	waitListed(t, a.hub, "ext-1", false)
	s2 := dial(t, c, "ext-1", last)
	waitListed(t, a.hub, "ext-1", true) // listed once C's replay is done
	_, err = a.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "marker"})
	require.NoError(t, err)
	require.Equal(t, "marker", next(t, s2)["type"], "the request the client had was replayed")
}

// A client that registers on another replica while its old stream is
// still open (a half-open connection, a reconnect that raced the drop)
// replaces the old registration cluster-wide, as it does within one
// replica: the old stream ends (EndReplaced) and a command reaches the
// client once, on the new one. The old registration kept its delivery
// subscription and both streams received every command.
func TestAClientRegisteringOnAnotherReplicaEndsItsOldStream(t *testing.T) {
	_, rs := cluster(t, time.Hour)
	a, b, c := rs[0], rs[1], rs[2]
	old := dial(t, a, "ext-1", "")
	waitListed(t, c.hub, "ext-1", true)
	moved := dial(t, b, "ext-1", "")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // against a hang only
	defer cancel()
	_, err := old.NextEvent(ctx)
	require.Error(t, err, "the old stream on A ends")
	require.NoError(t, ctx.Err(), "it ended, not the wait")
	_, held := a.hub.Local().Client("ext-1")
	require.False(t, held, "A holds the client no more")

	_, err = c.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "once"})
	require.NoError(t, err)
	require.Equal(t, "once", next(t, moved)["type"])
}

// A result posted to B while the broker restarts reaches its caller on A.
// The replicas subscribe again as they reconnect; a result relayed before
// A had found no responder, was refused as unknown_request (a client drops
// it) and the caller waited out its deadline. A relay that finds no
// responder for a replica not declared dead is sent again for a moment.
func TestAResultPostedWhileTheBrokerRestartsReachesItsCaller(t *testing.T) {
	srv, rs := cluster(t, time.Second)
	a, b := rs[0], rs[1]
	s := dial(t, b, "ext-1", "")
	waitListed(t, a.hub, "ext-1", true)
	out := request(a.proxy, context.Background(), "ext-1")
	msg := next(t, s)
	require.Equal(t, wire.TypeHostBrowserRequest, msg["type"])

	srv.Restart()
	code, e := postResult(t, b, "ext-1", actor, msg["requestId"].(string), `{"ok":1}`)
	require.Equal(t, http.StatusOK, code, e)
	o := wait(t, out)
	require.NoError(t, o.err)
	assert.JSONEq(t, `{"ok":1}`, string(o.res))
}

func TestPublishErrorsAndClose(t *testing.T) {
	_, rs := cluster(t, time.Second)
	h := rs[0].hub
	ctx := context.Background()
	_, err := h.Publish(ctx, eventhub.Target{}, "", map[string]string{})
	require.ErrorIs(t, err, eventhub.ErrEmptyTarget)
	_, err = h.Publish(ctx, eventhub.Target{ClientID: "x"}, "", func() {})
	require.ErrorContains(t, err, "marshal")
	_, err = h.Publish(ctx, eventhub.Target{Capability: eventhub.CapHostBrowser}, "", map[string]string{})
	require.ErrorIs(t, err, eventhub.ErrNoRecipients)
	_, err = h.Publish(ctx, eventhub.Target{ConversationID: "c"}, "c", map[string]string{})
	require.NoError(t, err, "a conversation event with no subscriber is kept for replay")
	held, err := h.Retract(ctx, "unknown")
	require.NoError(t, err)
	require.False(t, held)

	require.NoError(t, h.Close())
	require.NoError(t, h.Close(), "idempotent")
	_, err = h.Publish(ctx, eventhub.Target{ClientID: "x"}, "", map[string]string{})
	require.ErrorIs(t, err, eventhub.ErrClosed)
}

func TestCapabilityTargetReachesClientsOnEveryReplica(t *testing.T) {
	_, rs := cluster(t, time.Second)
	a, b, c := rs[0], rs[1], rs[2]
	sb := dial(t, b, "ext-b", "")
	sc := dial(t, c, "ext-c", "")
	waitListed(t, a.hub, "ext-b", true)
	waitListed(t, a.hub, "ext-c", true)
	_, err := a.hub.Publish(context.Background(), eventhub.Target{Capability: eventhub.CapHostBrowser}, "", map[string]string{"type": "all"})
	require.NoError(t, err)
	require.Equal(t, "all", next(t, sb)["type"])
	require.Equal(t, "all", next(t, sc)["type"])
}
