package custombackend_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/examples/custombackend"
	"github.com/browserchain/browserchain/local"
)

// A fifth backend kind is one Provider and one backend: it is pinnable by its
// mode string and its alias, serves auto invocations in the order given,
// fails over on transport errors, shows up in the status report with its
// transport and remediation, and waits out a reconnect grace.
func Example() {
	ctx := context.Background()
	pool := custombackend.NewPool()
	// A worker joins as soon as a pinned call starts waiting for one.
	logs := slog.New(joinOnWait{pool})
	last := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: &local.Descriptor, NewBackend: func() *browserbackendtest.Backend {
		return browserbackendtest.NewBackend(browserbackend.KindLocal, browserbackendtest.JSON(map[string]string{"from": "local"}))
	}}
	sel := browserbackend.NewSelector(browserbackend.Options{
		Providers: []browserbackend.Provider{pool, last}, // the farm first, local last
		Logger:    logs,
		Grace:     time.Second,
	})
	eval := browserbackend.Command{Method: "Runtime.evaluate", Params: []byte(`{"expression":"1"}`)}
	n := 0
	send := func(mode string) {
		n++
		m, err := sel.ParseMode(mode)
		if err != nil {
			fmt.Println(err)
			return
		}
		c := sel.Client(browserbackend.Invocation{ConversationID: fmt.Sprint("conv-", n), Mode: m})
		defer c.Close()
		_, err = c.Send(ctx, eval)
		fmt.Printf("%-13s → %-13s %v err=%v\n", mode, c.Kind(), browserbackend.AttemptSummary(c.Attempts()), err != nil)
	}

	// Status before any worker joined: the farm is listed, with its
	// transport and what a person can do.
	rep, _ := tools.Status(ctx, sel, browserbackend.Invocation{}, tools.StatusOptions{})
	farm, _ := rep.Backend(custombackend.Kind)
	fmt.Println("status:", farm.Kind, farm.Mode, farm.Transport, farm.Available, farm.UserActions)

	// Pinned by its alias, no worker yet: the call waits in its grace and
	// is woken by the worker joining.
	send("farm")

	send("auto")         // the farm comes first in the order given
	send("Browser-Farm") // its mode string, any case
	pool.SetDown(true)
	send("auto") // a transport error fails over to local
	send("nope")

	// Output:
	// status: browser-farm browser-farm farm-wss false [Start a browser-farm worker and let it join the pool.]
	// farm          → browser-farm  [browser-farm@success] err=false
	// auto          → browser-farm  [browser-farm@success] err=false
	// Browser-Farm  → browser-farm  [browser-farm@success] err=false
	// auto          → local         [browser-farm@send[unreachable] local@success] err=false
	// browserbackend: policy/invalid_mode: invalid browser_mode "nope": accepted values are auto, browser-farm, local (aliases: farm = browser-farm, playwright = local)
}

// joinOnWait is a slog handler that lets a worker join the pool when the
// selector logs that a pinned call is waiting for a candidate.
type joinOnWait struct{ pool *custombackend.Pool }

func (h joinOnWait) Enabled(context.Context, slog.Level) bool { return true }
func (h joinOnWait) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "waiting for a candidate to appear" {
		h.pool.Join("w1")
	}
	return nil
}
func (h joinOnWait) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h joinOnWait) WithGroup(string) slog.Handler      { return h }
