package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/local"
)

// A Browser launches on the first command and serves every conversation
// from its own page.
func Example() {
	b := local.New(local.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer b.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := b.Client("conversation-1")
	defer c.Close()
	raw, err := c.Send(ctx, browserbackend.Command{
		Method: "Runtime.evaluate",
		Params: json.RawMessage(`{"expression":"6*7","returnByValue":true}`),
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	var res struct {
		Result struct{ Value int } `json:"result"`
	}
	_ = json.Unmarshal(raw, &res)
	fmt.Println(res.Result.Value, b.Conversations())
	// Output: 42 [conversation-1]
}
