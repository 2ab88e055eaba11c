package tools_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/browserchain/browserchain/browserbackend/tools"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"mail ada.l+x@mail.example.co.uk now", "mail " + tools.RedactedEmail + " now"},
		{"card 4111 1111 1111 1111.", "card " + tools.RedactedCard + "."},
		{"card 4111-1111-1111-1111", "card " + tools.RedactedCard},
		{"call +44 20 7946 0958 or (555) 123-4567", "call " + tools.RedactedPhone + " or " + tools.RedactedPhone},
		{"not a card 4111 1111 1111 1112", "not a card 4111 1111 1111 1112"},
		{"order 2026-03-01, 12 items, $1,299.00", "order 2026-03-01, 12 items, $1,299.00"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, tools.Redact(tc.in), tc.in)
	}
}
