package browserbackend

import (
	"container/list"
	"sync"
)

// DefaultMaxMemo bounds a Memo whose Max is zero.
const DefaultMaxMemo = 10000

// Memo remembers, per conversation, the backend kind that last served it.
// It is an LRU bounded by Max. Safe for concurrent use; the zero
// value is ready.
type Memo struct {
	// Max bounds the number of conversations; 0 means DefaultMaxMemo.
	Max int

	mu    sync.Mutex
	order *list.List // of memoEntry, most recent at front
	byID  map[string]*list.Element
}

type memoEntry struct {
	conv string
	kind Kind
}

// Get returns the remembered kind.
func (m *Memo) Get(conversationID string) (Kind, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.byID[conversationID]; ok {
		return e.Value.(memoEntry).kind, true
	}
	return "", false
}

// Set remembers k for the conversation; an empty conversation id is ignored.
func (m *Memo) Set(conversationID string, k Kind) {
	if conversationID == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = make(map[string]*list.Element)
		m.order = list.New()
	}
	if e, ok := m.byID[conversationID]; ok {
		e.Value = memoEntry{conversationID, k}
		m.order.MoveToFront(e)
		return
	}
	m.byID[conversationID] = m.order.PushFront(memoEntry{conversationID, k})
	max := m.Max
	if max <= 0 {
		max = DefaultMaxMemo
	}
	for m.order.Len() > max {
		last := m.order.Back()
		delete(m.byID, last.Value.(memoEntry).conv)
		m.order.Remove(last)
	}
}

// Forget drops the conversation's memo.
func (m *Memo) Forget(conversationID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.byID[conversationID]; ok {
		m.order.Remove(e)
		delete(m.byID, conversationID)
	}
}

// Len reports how many conversations are remembered.
func (m *Memo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID)
}
