// Package textcap cuts text to a byte budget without splitting a UTF-8
// sequence.
package textcap

// Cut returns s when it is at most n bytes long, else its longest prefix of
// at most n bytes that ends on a rune boundary, followed by "…" (so the
// result may exceed n by the ellipsis' three bytes). n < 0 is treated as 0.
func Cut(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xc0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
