package bridge

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
)

// CheckDevTools refuses, before anything is dialled, a DevTools endpoint
// that is not on this machine's loopback interface: cfg's host, and wsURL's
// host when wsURL is not empty. A bridge hands the user's local Chrome to
// their own assistant; a DevTools address on another machine would put a
// browser that is not the user's (over a connection anyone on the path can
// read and drive) behind the user's identity. The error is a
// *browserbackend.Error of class transport and code non_loopback, as
// discovery would return, whose text says what to use instead; a wsURL
// that is not a ws:// or wss:// URL is class policy, code invalid_params.
func CheckDevTools(cfg cdpinspect.Config, wsURL string) error {
	if err := checkLoopbackHost("DevTools host", cfg.Host); err != nil {
		return err
	}
	if wsURL == "" {
		return nil
	}
	u, err := url.Parse(wsURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Hostname() == "" {
		return &browserbackend.Error{Class: browserbackend.ClassPolicy, Code: browserbackend.CodeInvalidParams,
			Message: fmt.Sprintf("bridge: DevTools WebSocket URL %q is not a ws:// URL", wsURL)}
	}
	return checkLoopbackHost("DevTools WebSocket URL host", u.Hostname())
}

func checkLoopbackHost(what, host string) error {
	h := strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(h, "localhost") {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &browserbackend.Error{Class: browserbackend.ClassTransport, Code: browserbackend.CodeNonLoopback,
		Message: fmt.Sprintf("bridge: %s %q is not a loopback address: the bridge drives only the Chrome on this "+
			"machine (a remote DevTools endpoint is not the user's browser and its connection is unauthenticated); "+
			"use localhost or 127.0.0.1 with Chrome's --remote-debugging-port", what, host)}
}
