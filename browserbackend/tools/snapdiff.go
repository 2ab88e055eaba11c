package tools

import (
	"container/list"
	"fmt"
	"strconv"
	"sync"
)

// SnapshotDiff is a snapshot compared with the conversation's previous one
// (SnapshotInput.Diff). A node is identified by its ref; a node without one
// (a text, a frame line) by the ref of the nearest line above it that it is
// in, its role and its name. A node whose ref is in both snapshots with
// another role, name or value has changed; a text that changed has
// disappeared and appeared.
type SnapshotDiff struct {
	// Whole is true when the result's Text and Nodes are the whole
	// snapshot rather than its changes: the conversation had no previous
	// snapshot (or not of the element Ref names), or the changes' lines
	// would be longer (another page). The lists are then empty.
	Whole       bool           `json:"whole,omitempty"`
	Appeared    []SnapshotNode `json:"appeared,omitempty"`
	Changed     []NodeChange   `json:"changed,omitempty"`
	Disappeared []SnapshotNode `json:"disappeared,omitempty"`
}

// NodeChange is a node of both snapshots whose role, name or value changed.
type NodeChange struct {
	Was SnapshotNode `json:"was"`
	Now SnapshotNode `json:"now"`
}

// diffNodes compares cur with prev (both narrowed the same way).
func diffNodes(prev, cur []SnapshotNode) SnapshotDiff {
	var d SnapshotDiff
	before := make(map[string]int, len(prev))
	for i, k := range nodeKeys(prev) {
		before[k] = i
	}
	seen := make([]bool, len(prev))
	for i, k := range nodeKeys(cur) {
		j, ok := before[k]
		if !ok {
			d.Appeared = append(d.Appeared, cur[i])
			continue
		}
		seen[j] = true
		if p, n := &prev[j], &cur[i]; p.Role != n.Role || p.Name != n.Name || p.Value != n.Value {
			d.Changed = append(d.Changed, NodeChange{Was: *p, Now: *n})
		}
	}
	for j, s := range seen {
		if !s {
			d.Disappeared = append(d.Disappeared, prev[j])
		}
	}
	return d
}

// nodeKeys returns each node's identity (see SnapshotDiff); a repeated
// identity gets its occurrence number.
func nodeKeys(nodes []SnapshotNode) []string {
	keys := make([]string, len(nodes))
	count := map[string]int{}
	var refs []int // indexes of the lines with a ref that the walk is in
	for i := range nodes {
		n := &nodes[i]
		for len(refs) > 0 && nodes[refs[len(refs)-1]].Depth >= n.Depth {
			refs = refs[:len(refs)-1]
		}
		if n.Ref != "" {
			keys[i] = n.Ref
			refs = append(refs, i)
			continue
		}
		in := ""
		if len(refs) > 0 {
			in = nodes[refs[len(refs)-1]].Ref
		}
		k := in + "\x00" + n.Frame + "\x00" + n.Role + "\x00" + n.Name
		count[k]++
		if c := count[k]; c > 1 {
			k += "\x00" + strconv.Itoa(c)
		}
		keys[i] = k
	}
	return keys
}

// size is the number of changes.
func (d *SnapshotDiff) size() int { return len(d.Appeared) + len(d.Changed) + len(d.Disappeared) }

// render writes d as lines, at most max of them: a heading line, then
// "+ " and the line of each node that appeared, "~ " and the line of each
// that changed with what it was, "- " and the line of each that
// disappeared.
func (d *SnapshotDiff) render(max int) snapLines {
	r := snapLines{max: max}
	r.grow(d.size())
	if d.size() == 0 {
		r.b.WriteString("[no change since the previous snapshot]\n")
		return r
	}
	fmt.Fprintf(&r.b, "[changes since the previous snapshot: %d appeared, %d changed, %d disappeared]\n",
		len(d.Appeared), len(d.Changed), len(d.Disappeared))
	var b []byte
	emit := func(mark string, n *SnapshotNode, was *SnapshotNode) {
		if len(r.nodes) >= r.max {
			r.truncated = true
			return
		}
		r.nodes = append(r.nodes, *n)
		b = appendNode(append(b[:0], mark...), n)
		if was != nil {
			b = appendNode(append(b, " (was: "...), was)
			b = append(b, ')')
		}
		r.b.Write(append(b, '\n'))
	}
	for i := range d.Appeared {
		emit("+ ", &d.Appeared[i], nil)
	}
	for i := range d.Changed {
		emit("~ ", &d.Changed[i].Now, &d.Changed[i].Was)
	}
	for i := range d.Disappeared {
		emit("- ", &d.Disappeared[i], nil)
	}
	r.finish()
	return r
}

// Bounds of the snapshots Tools keeps for SnapshotInput.Diff: the most
// recent conversations' last snapshots, at most this many and this many
// nodes in all; the least recently used goes first.
const (
	maxKeptSnapshots     = 256
	maxKeptSnapshotNodes = 200000
)

// keptSnapshot is a conversation's last snapshot, whole (not narrowed).
type keptSnapshot struct {
	conv  string
	nodes []SnapshotNode
	// clickable: rendered with RoleClickable lines.
	clickable bool
}

// snapMemory keeps each conversation's last snapshot, bounded by
// maxKeptSnapshots and maxKeptSnapshotNodes. Safe for concurrent use.
type snapMemory struct {
	mu    sync.Mutex
	m     map[string]*list.Element
	order list.List // of *keptSnapshot, most recent first
	nodes int
}

// get returns conv's last snapshot.
func (s *snapMemory) get(conv string) (keptSnapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[conv]
	if !ok {
		return keptSnapshot{}, false
	}
	s.order.MoveToFront(e)
	return *e.Value.(*keptSnapshot), true
}

// put makes k its conversation's last snapshot, dropping the least
// recently used ones beyond the bounds.
func (s *snapMemory) put(k keptSnapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(k.conv)
	if len(k.nodes) > maxKeptSnapshotNodes {
		return
	}
	if s.m == nil {
		s.m = map[string]*list.Element{}
	}
	s.m[k.conv] = s.order.PushFront(&k)
	s.nodes += len(k.nodes)
	for s.order.Len() > maxKeptSnapshots || s.nodes > maxKeptSnapshotNodes {
		s.forgetLocked(s.order.Back().Value.(*keptSnapshot).conv)
	}
}

// forget drops conv's last snapshot.
func (s *snapMemory) forget(conv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(conv)
}

func (s *snapMemory) forgetLocked(conv string) {
	if e, ok := s.m[conv]; ok {
		s.nodes -= len(e.Value.(*keptSnapshot).nodes)
		s.order.Remove(e)
		delete(s.m, conv)
	}
}

// wholeNote is the first line of a diff that shows the whole snapshot.
func wholeNote(base bool) string {
	if !base {
		return "[no previous snapshot to compare with: the whole snapshot follows]\n"
	}
	return "[the changes since the previous snapshot would be longer than the snapshot: the whole snapshot follows]\n"
}

// withoutRole returns nodes without those of role, in a new slice when any
// is left out.
func withoutRole(nodes []SnapshotNode, role string) []SnapshotNode {
	for i := range nodes {
		if nodes[i].Role == role {
			return keep(nodes, func(n *SnapshotNode) bool { return n.Role != role })
		}
	}
	return nodes
}
