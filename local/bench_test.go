//go:build linux

package local

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/browserchain/browserchain/browserbackend"
)

var benchEval = browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1+1"}`)}

// BenchmarkColdFirstAnswer measures a whole cold start: driver + browser
// launch + page + the first Runtime.evaluate answer, then Close.
func BenchmarkColdFirstAnswer(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		br := New(Options{Logger: quietLogger()})
		if _, err := br.Client("c").Send(ctx, benchEval); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = br.Close()
		b.StartTimer()
	}
}

// BenchmarkWarmInvocationFirstAnswer measures a later invocation of an
// existing conversation on a running browser: new Client, first answer, Close.
func BenchmarkWarmInvocationFirstAnswer(b *testing.B) {
	ctx := context.Background()
	br := New(Options{Logger: quietLogger()})
	defer br.Close()
	if _, err := br.Client("c").Send(ctx, benchEval); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c := br.Client("c")
		if _, err := c.Send(ctx, benchEval); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// BenchmarkWarmNewConversationFirstAnswer: the first invocation of a new
// conversation on a running browser (opens a page and its CDPSession).
func BenchmarkWarmNewConversationFirstAnswer(b *testing.B) {
	ctx := context.Background()
	br := New(Options{Logger: quietLogger()})
	defer br.Close()
	if _, err := br.Client("warmup").Send(ctx, benchEval); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		conv := fmt.Sprintf("c%d", i)
		c := br.Client(conv)
		if _, err := c.Send(ctx, benchEval); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
		b.StopTimer()
		_ = br.CloseConversation(conv)
		waitSpare(br)
		b.StartTimer()
	}
}

// BenchmarkSelectorWarmInvocationFirstAnswer measures what a tool call pays
// on a warm browser through the whole chain: a new per-invocation Client of
// the selector (providers: local only), its first command (candidate list,
// Build, send), Close.
func BenchmarkSelectorWarmInvocationFirstAnswer(b *testing.B) {
	ctx := context.Background()
	br := New(Options{Logger: quietLogger()})
	defer br.Close()
	sel := browserbackend.NewSelector(browserbackend.Options{
		Providers: []browserbackend.Provider{NewProvider(br)},
		Logger:    quietLogger(),
	})
	inv := browserbackend.Invocation{ConversationID: "c", InterfaceID: "cli"}
	warm := sel.Client(inv)
	if _, err := warm.Send(ctx, benchEval); err != nil {
		b.Fatal(err)
	}
	_ = warm.Close()
	for b.Loop() {
		c := sel.Client(inv)
		if _, err := c.Send(ctx, benchEval); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// waitSpare waits until the spare-page refill in progress, if any, ends.
func waitSpare(br *Browser) {
	br.mu.Lock()
	var ch chan struct{}
	if br.st != nil && br.st.refilling {
		ch = br.st.refilled
	}
	br.mu.Unlock()
	if ch != nil {
		<-ch
	}
}
