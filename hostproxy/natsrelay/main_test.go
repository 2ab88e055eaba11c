package natsrelay_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/eventhub/eventhubtest"
	"github.com/browserchain/browserchain/eventhub/natshub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/natsrelay"
)

// replicaEnv, when set to a broker URL, makes the test binary run as one
// replica process instead of the tests (see startReplicaProcess).
const (
	replicaEnv     = "NATSRELAY_TEST_REPLICA_URL"
	replicaNameEnv = "NATSRELAY_TEST_REPLICA_NAME"
	replicaHBEnv   = "NATSRELAY_TEST_REPLICA_HEARTBEAT"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(replicaEnv); url != "" {
		if err := runReplica(url, os.Getenv(replicaNameEnv), os.Getenv(replicaHBEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "replica:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runReplica serves one replica until the process is killed: it prints
// "listening <addr>" once its routes are up.
func runReplica(url, name, hb string) error {
	d, err := time.ParseDuration(hb)
	if err != nil {
		return err
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hub, err := natshub.New(ctx, nc, name, natshub.WithHeartbeat(d), natshub.WithLogger(quiet()))
	if err != nil {
		return err
	}
	proxy := natsrelay.NewProxy(hub, hostproxy.Options{Logger: quiet()})
	mux := http.NewServeMux()
	mux.Handle(wire.PathEvents, hub.EventsHandler())
	mux.Handle(wire.PathPing, hub.PingHandler())
	proxy.Mount(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	return http.Serve(ln, eventhubtest.ActorFromHeader(mux))
}
