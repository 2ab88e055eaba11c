package harness

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/hostproxy/remote"
)

// The rows of the transport phase (§10): the reference extension on each of
// its transports, one browser each, against one server.
const (
	TransportOneSocket = "one WebSocket, local (loopback)"
	TransportRemoteTLS = "remote device socket (TLS on loopback)"
	TransportSSEPost   = "SSE + POST, local (loopback)"
)

// TransportResult is one row of the transport phase: round trips of
// Runtime.evaluate and, per command in ms, the time inside chrome.debugger
// (Inside) and the rest (Overhead = round trip − Inside).
type TransportResult struct {
	Name, Note       string
	D                Durations
	Inside, Overhead Floats
	// Via counts the results by the transport they arrived on.
	Via map[string]int `json:",omitempty"`
}

// MeasureTransport measures the extension's transport overhead on its three
// transports side by side: three headless Chromiums with the reference
// extension, paired with one server — over the subscribed result socket,
// over SSE + POST (a server without the socket route), and in remote mode
// over TLS on loopback (hostproxy/remote, a certificate made for the run and
// trusted by that browser through --ignore-certificate-errors-spki-list).
// Rounds are interleaved as in MeasureEvaluate; warmup rounds are dropped.
func MeasureTransport(ctx context.Context, root string, rounds, warmup int) ([]TransportResult, error) {
	s, err := StartServer()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	fix, err := StartFixtures()
	if err != nil {
		return nil, err
	}
	defer fix.Close()
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	type path struct {
		name, note, want string
		be               interface {
			Send(context.Context, bb.Command) (json.RawMessage, error)
		}
	}
	var paths []path
	known := map[string]bool{}
	add := func(name, note, want, clientID string) error {
		known[clientID] = true
		inv := s.Invocation("bench-transport-"+clientID, wire.InterfaceMacOS)
		inv.TargetClientID = clientID
		be := s.Proxy.NewExtensionBackend(inv, hostproxyOpts)
		closers = append(closers, func() { be.Close() })
		p, _ := json.Marshal(map[string]any{"url": fix.URL("/page"), "active": true})
		if _, err := be.Send(ctx, bb.Command{Method: "Vellum.createTab", Params: p}); err != nil {
			return fmt.Errorf("benchreport: transport %s: %w", name, err)
		}
		paths = append(paths, path{name, note, want, be})
		return nil
	}
	local := func(serverURL string) (string, error) {
		dir, err := CopyExtension(root, serverURL)
		if err != nil {
			return "", err
		}
		closers = append(closers, func() { os.RemoveAll(dir) })
		br, err := StartChromium(ctx, dir)
		if err != nil {
			return "", err
		}
		closers = append(closers, br.Close)
		return s.waitNewClient(ctx, wire.InterfaceChromeExtension, known)
	}

	id, err := local(s.SocketURL)
	if err != nil {
		return nil, err
	}
	if err := add(TransportOneSocket, "the result socket in its subscribed mode carries requests, results and events", "websocket", id); err != nil {
		return nil, err
	}
	if id, err = local(s.FetchOnlyURL); err != nil {
		return nil, err
	}
	if err := add(TransportSSEPost, "the server has no socket route: commands over GET /v1/events, each result a fetch POST", "http", id); err != nil {
		return nil, err
	}
	id, stop, err := startRemoteExtension(ctx, root, s, known)
	closers = append(closers, stop)
	if err != nil {
		return nil, err
	}
	if err := add(TransportRemoteTLS, "remote mode: one wss:// socket to hostproxy/remote, TLS 1.3 on 127.0.0.1", "remote", id); err != nil {
		return nil, err
	}

	s.record.Store(true)
	defer s.record.Store(false)
	res := make([]TransportResult, len(paths))
	for i, p := range paths {
		res[i] = TransportResult{Name: p.name, Note: p.note, D: make(Durations, 0, rounds), Via: map[string]int{}}
	}
	order := newRounds(len(paths))
	for r := range warmup + rounds {
		for _, i := range order.next() {
			t0 := time.Now()
			_, err := paths[i].be.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: EvalParams})
			d := time.Since(t0)
			if err != nil {
				return nil, fmt.Errorf("benchreport: transport %s: %w", paths[i].name, err)
			}
			if r < warmup {
				continue
			}
			last := s.LastRequestID()
			res[i].D = append(res[i].D, d)
			res[i].Via[string(s.Via(last))]++
			if in, _, ok := s.Timing(last); ok {
				res[i].Inside = append(res[i].Inside, in)
				res[i].Overhead = append(res[i].Overhead, float64(d)/float64(time.Millisecond)-in)
			}
		}
	}
	for i, p := range paths {
		if res[i].Via[p.want] != len(res[i].D) {
			return nil, fmt.Errorf("benchreport: transport %s: results came %v, not all over %s", p.name, res[i].Via, p.want)
		}
	}
	return res, nil
}

// startRemoteExtension serves hostproxy/remote over TLS on a loopback port
// for s's proxy and hub, starts a Chromium with the extension (paused in
// local mode) that trusts the run's certificate, pairs it with a link
// through its popup and returns its client id.
func startRemoteExtension(ctx context.Context, root string, s *Server, known map[string]bool) (string, func(), error) {
	var closers []func()
	stop := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	cert, spki, err := loopbackCert()
	if err != nil {
		return "", stop, err
	}
	dir, err := os.MkdirTemp("", "benchreport-remote-")
	if err != nil {
		return "", stop, err
	}
	closers = append(closers, func() { os.RemoveAll(dir) })
	store, err := remote.OpenStore(filepath.Join(dir, "remote.db"), remote.StoreOptions{})
	if err != nil {
		return "", stop, err
	}
	closers = append(closers, func() { store.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", stop, err
	}
	srv, err := remote.New(remote.Options{Store: store, Proxy: s.Proxy, Hub: s.Hub,
		Endpoint: "wss://" + ln.Addr().String() + "/extension", Logger: discard})
	if err != nil {
		ln.Close()
		return "", stop, err
	}
	closers = append(closers, func() { srv.Close() })
	mux := http.NewServeMux()
	srv.Mount(mux)
	hs := remote.NewHTTPServer(mux, nil, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, discard)
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.ServeTLS(ln, "", "") }()
	closers = append(closers, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		<-served
	})

	ext, err := CopyExtension(root, "http://127.0.0.1:1")
	if err != nil {
		return "", stop, err
	}
	closers = append(closers, func() { os.RemoveAll(ext) })
	if err := os.WriteFile(filepath.Join(ext, "config.json"), []byte(`{"autoConnect":false}`), 0o644); err != nil {
		return "", stop, err
	}
	br, err := StartChromium(ctx, ext, "--ignore-certificate-errors-spki-list="+spki)
	if err != nil {
		return "", stop, err
	}
	closers = append(closers, br.Close)
	link, err := srv.CreateLink(ctx, s.Auth.ActorPrincipalID())
	if err != nil {
		return "", stop, err
	}
	cdp, err := DialRaw(ctx, br.WSURL)
	if err != nil {
		return "", stop, err
	}
	defer cdp.Close()
	// The popup page, loaded (Page.navigate answers once it is committed),
	// asks the worker to pair.
	if err := cdp.AttachNewTab(ctx, "about:blank"); err != nil {
		return "", stop, err
	}
	nav, _ := json.Marshal(map[string]any{"url": "chrome-extension://" + ExtensionID + "/popup.html"})
	if _, err := cdp.Send(ctx, "Page.navigate", nav); err != nil {
		return "", stop, err
	}
	expr, _ := json.Marshal(map[string]any{"awaitPromise": true, "returnByValue": true,
		"expression": fmt.Sprintf(`new Promise((r) => document.readyState === 'complete' ? r() : addEventListener('load', () => r()))
			.then(() => chrome.runtime.sendMessage({type: 'remote.pair', link: %q}))
			.then((r) => (r && r.error) || 'paired')`, link.URL)})
	out, err := cdp.Send(ctx, "Runtime.evaluate", expr)
	if err != nil {
		return "", stop, err
	}
	var r struct {
		Result           struct{ Value string }
		ExceptionDetails json.RawMessage
	}
	_ = json.Unmarshal(out, &r)
	if r.Result.Value != "paired" {
		return "", stop, fmt.Errorf("benchreport: remote pairing: %q %s", r.Result.Value, r.ExceptionDetails)
	}
	id, err := s.waitNewClient(ctx, wire.InterfaceChromeExtension, known)
	return id, stop, err
}

// loopbackCert makes a self-signed ECDSA certificate for 127.0.0.1, valid
// for a day, and the base64 SHA-256 of its public key (the form Chromium's
// --ignore-certificate-errors-spki-list takes).
func loopbackCert() (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "benchreport"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, base64.StdEncoding.EncodeToString(sum[:]), nil
}
