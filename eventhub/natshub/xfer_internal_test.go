package natshub

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
)

func part(id string, i, n int, data string) *nats.Msg {
	m := nats.NewMsg("s")
	m.Header.Set(hdrXfer, id)
	m.Header.Set(hdrPart, strconv.Itoa(i))
	m.Header.Set(hdrParts, strconv.Itoa(n))
	m.Data = []byte(data)
	return m
}

func TestAssemblerJoinsPartsInOrderAndDropsBadTransfers(t *testing.T) {
	a := &assembler{max: 8}
	if m, ok := a.add(&nats.Msg{Data: []byte("whole")}); !ok || string(m.Data) != "whole" {
		t.Fatalf("a message without parts passes as is")
	}
	if _, ok := a.add(part("x", 0, 2, "ab")); ok {
		t.Fatal("first of two parts completed the transfer")
	}
	if m, ok := a.add(part("x", 1, 2, "cd")); !ok || string(m.Data) != "abcd" {
		t.Fatalf("joined %q, %v", m.Data, ok)
	}
	if _, ok := a.add(part("y", 1, 2, "cd")); ok {
		t.Fatal("a transfer starting at part 1 was accepted")
	}
	a.add(part("z", 0, 3, "abc"))
	if _, ok := a.add(part("z", 2, 3, "ghi")); ok {
		t.Fatal("a skipped part was accepted")
	}
	if _, ok := a.add(part("z", 1, 3, "def")); ok {
		t.Fatal("a dropped transfer went on")
	}
	a.add(part("big", 0, 2, "12345"))
	if _, ok := a.add(part("big", 1, 2, "6789")); ok {
		t.Fatal("a transfer over max bytes was accepted")
	}
	if len(a.parts) != 0 {
		t.Fatalf("%d partial transfers left", len(a.parts))
	}
}
