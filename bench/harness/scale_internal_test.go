package harness

import "testing"

// A conversation's tab set-up is published like any request and is no
// duplicate; a request delivered twice, a measured command run twice under
// two ids, a refused result and a result accepted twice each are.
func TestScaleDuplicatesCountOnlyAnswersGivenTwice(t *testing.T) {
	// 3 conversations × 2 measured commands, each conversation's first
	// bringing 2 set-up requests (createTab, attach).
	clean := func() deliveries {
		return deliveries{received: 12, published: 12, evaluated: 6, measured: 6,
			accepted: map[string]int{"a": 1, "b": 1}}
	}
	for _, tc := range []struct {
		name string
		edit func(*deliveries)
		want int
	}{
		{"clean run with set-up", func(*deliveries) {}, 0},
		{"a measured request delivered twice", func(d *deliveries) { d.received++; d.evaluated++ }, 1},
		{"a set-up request delivered twice", func(d *deliveries) { d.received++ }, 1},
		{"a measured command re-sent under a new id", func(d *deliveries) { d.received++; d.published++; d.evaluated++ }, 1},
		{"a refused result", func(d *deliveries) { d.refused++ }, 1},
		{"a result accepted twice", func(d *deliveries) { d.accepted["a"] = 2 }, 1},
		{"a request never delivered", func(d *deliveries) { d.received--; d.evaluated-- }, 0},
	} {
		d := clean()
		tc.edit(&d)
		if got := d.duplicates(); got != tc.want {
			t.Errorf("%s: %d duplicates, want %d", tc.name, got, tc.want)
		}
	}
}
