package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/hostproxy/remote"
)

// remoteConfig is the remote listener's part of the command line.
type remoteConfig struct {
	listen, publicURL, tlsCert, tlsKey, store string
	limits                                    remote.Limits
	maxSetup                                  int
}

func defaultRemoteStore() string {
	return filepath.Join(filepath.Dir(runtime.DefaultKeyFile()), "remote.db")
}

// addRemoteFlags registers the remote listener's flags on fs.
func addRemoteFlags(fs *flag.FlagSet, r *remoteConfig) {
	fs.StringVar(&r.listen, "remote-listen", "", "address of the remote browser listener; empty: no remote listener")
	fs.StringVar(&r.publicURL, "public-url", "", "public wss:// URL of the remote socket, e.g. wss://browser.example.com:52800/extension (credentials are bound to it)")
	fs.StringVar(&r.tlsCert, "tls-cert", "", "certificate chain (PEM) of the remote listener; without it the listener must be on loopback behind a TLS reverse proxy")
	fs.StringVar(&r.tlsKey, "tls-key", "", "private key (PEM) of -tls-cert")
	fs.StringVar(&r.store, "remote-store", defaultRemoteStore(), "device grant store (SQLite, mode 0600), shared with the pair/devices/revoke verbs")
	fs.DurationVar(&r.limits.PairingTTL, "pairing-ttl", remote.DefaultPairingTTL, "lifetime of a pairing link, at most 1h")
	fs.DurationVar(&r.limits.DeviceTTL, "device-ttl", remote.DefaultDeviceTTL, "device grant lifetime from pairing or renewal, at most 8784h (366 days)")
	fs.DurationVar(&r.limits.RenewAfter, "renew-after", remote.DefaultRenewAfter, "time after which the extension renews; less than -device-ttl")
	fs.IntVar(&r.limits.MaxConnections, "max-connections", remote.DefaultMaxConnections, "online browser capacity, 1-1000 (a device may replace its own connection)")
	fs.IntVar(&r.limits.AuthorizeRate, "authorize-rate-limit", remote.DefaultAuthorizeRate, "pairing/renewal exchanges per minute per peer IP, 1-60000")
	fs.IntVar(&r.maxSetup, "max-setup", remote.DefaultMaxSetup, "connections in TCP/TLS/HTTP setup at once, a quarter of them from one address; over a bound the oldest in setup is closed")
}

// check validates the remote flags when -remote-listen is set:
// -public-url is a wss:// URL (ws:// only for a loopback one); -tls-cert
// and -tls-key go together; without them the listener is on loopback.
func (r remoteConfig) check() error {
	if r.listen == "" {
		if r.tlsCert != "" || r.tlsKey != "" {
			return errors.New("-tls-cert and -tls-key need -remote-listen")
		}
		return nil
	}
	if r.publicURL == "" {
		return errors.New("-remote-listen needs -public-url")
	}
	if (r.tlsCert == "") != (r.tlsKey == "") {
		return errors.New("-tls-cert and -tls-key go together")
	}
	host, _, err := net.SplitHostPort(r.listen)
	if err != nil {
		return fmt.Errorf("-remote-listen %q: %w", r.listen, err)
	}
	if r.tlsCert == "" {
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("-remote-listen %q: without -tls-cert the remote listener must be on loopback (behind a TLS reverse proxy)", r.listen)
		}
	}
	u, err := url.Parse(r.publicURL)
	if err != nil {
		return fmt.Errorf("-public-url %q: %w", r.publicURL, err)
	}
	if r.tlsCert != "" && u.Scheme != "wss" {
		return fmt.Errorf("-public-url %q: with native TLS the public URL is wss://", r.publicURL)
	}
	return r.limits.Validate()
}

// startRemote serves the remote listener of rt until stop is called; addr
// is the address it listens on.
func startRemote(r remoteConfig, rt *runtime.Runtime, log *slog.Logger) (addr string, stop func(), err error) {
	store, err := remote.OpenStore(r.store, remote.StoreOptions{})
	if err != nil {
		return "", nil, err
	}
	sub, ok := rt.Cluster.(remote.Subscriber)
	if !ok {
		sub = rt.Hub
	}
	srv, err := remote.New(remote.Options{Store: store, Proxy: rt.Proxy, Hub: sub, Endpoint: r.publicURL,
		Limits: r.limits, Logger: log, ServiceName: "browserchain reference server"})
	if err != nil {
		store.Close()
		return "", nil, err
	}
	var tlsConfig *tls.Config
	if r.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(r.tlsCert, r.tlsKey)
		if err != nil {
			srv.Close()
			store.Close()
			return "", nil, fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	mux := http.NewServeMux()
	srv.Mount(mux)
	limit := remote.NewSetupLimit(r.maxSetup, log)
	hs := remote.NewHTTPServer(mux, limit, tlsConfig, log)
	ln, err := net.Listen("tcp", r.listen)
	if err != nil {
		srv.Close()
		store.Close()
		return "", nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		if tlsConfig != nil {
			err = hs.ServeTLS(limit.Listener(ln), "", "")
		} else {
			err = hs.Serve(limit.Listener(ln))
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("remote listener stopped", "module", "example-server", "error", err)
		}
	}()
	log.Info("remote browser listener", "module", "example-server", "addr", ln.Addr().String(),
		"publicURL", r.publicURL, "tls", tlsConfig != nil, "store", r.store)
	return ln.Addr().String(), func() {
		srv.Close() // ends the sockets, which the HTTP server no longer tracks
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-done
		store.Close()
	}, nil
}

// verbs are the operator's commands on the grant store; they open
// the store file the running server uses.
var verbs = map[string]func(args []string, out io.Writer) error{
	"pair":    verbPair,
	"devices": verbDevices,
	"revoke":  verbRevoke,
}

func openStoreFlag(fs *flag.FlagSet) *string {
	return fs.String("remote-store", defaultRemoteStore(), "device grant store of the server")
}

// verbPair prints a new single-use pairing link.
func verbPair(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pair", flag.ContinueOnError)
	path := openStoreFlag(fs)
	publicURL := fs.String("public-url", "", "the server's -public-url (required)")
	actor := fs.String("actor", auth.DefaultActor, "actor principal id the paired device acts for")
	ttl := fs.Duration("pairing-ttl", remote.DefaultPairingTTL, "lifetime of the link, at most 1h")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *publicURL == "" {
		return errors.New("pair: -public-url is required (the server's)")
	}
	st, err := remote.OpenStore(*path, remote.StoreOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	link, err := st.CreateLink(context.Background(), *publicURL, *actor, *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, link.URL)
	fmt.Fprintf(out, "single use; expires %s\n", link.ExpiresAt.Format(time.RFC3339))
	return nil
}

// verbDevices lists the device grants, never credentials.
func verbDevices(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("devices", flag.ContinueOnError)
	path := openStoreFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := remote.OpenStore(*path, remote.StoreOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	devs, err := st.Devices(context.Background())
	if err != nil {
		return err
	}
	if *asJSON {
		if devs == nil {
			devs = []remote.Device{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(devs)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE ID\tBROWSER ID\tLABEL\tACTOR\tEXPIRES")
	for _, d := range devs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.DeviceID, d.BrowserID, d.Label, d.Actor, d.ExpiresAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// verbRevoke revokes one device, or with -all every device and unused
// link; the server closes their sockets within a second.
func verbRevoke(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("revoke", flag.ContinueOnError)
	path := openStoreFlag(fs)
	all := fs.Bool("all", false, "revoke every device and every unused pairing link")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *all == (fs.NArg() == 1) || fs.NArg() > 1 {
		return errors.New("revoke: give one DEVICE_ID, or -all")
	}
	st, err := remote.OpenStore(*path, remote.StoreOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	if *all {
		devs, links, err := st.RevokeAll(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "revoked %d devices and %d unused links\n", devs, links)
		return nil
	}
	if err := st.Revoke(ctx, fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(out, "revoked %s\n", fs.Arg(0))
	return nil
}

// runVerb runs an operator verb when args start with one.
func runVerb(args []string, out io.Writer) (handled bool, err error) {
	if len(args) == 0 {
		return false, nil
	}
	v, ok := verbs[args[0]]
	if !ok {
		return false, nil
	}
	err = v(args[1:], out)
	if errors.Is(err, flag.ErrHelp) {
		err = nil
	}
	return true, err
}
