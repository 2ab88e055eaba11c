package logtest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/browserchain/browserchain/internal/logtest"
)

func TestBufferKeepsEveryConcurrentWrite(t *testing.T) {
	var b logtest.Buffer
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { fmt.Fprintf(&b, "line %d\n", i) })
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 50 {
		t.Fatalf("got %d lines, want 50", n)
	}
	if got := b.Bytes(); string(got) != b.String() {
		t.Fatalf("Bytes and String differ")
	}
}
