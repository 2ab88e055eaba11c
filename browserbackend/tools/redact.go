package tools

import (
	"regexp"

	"github.com/browserchain/browserchain/browserbackend"
)

// What Redact puts in place of what it finds.
const (
	RedactedEmail = "[redacted email]"
	RedactedPhone = "[redacted phone]"
	RedactedCard  = "[redacted card]"
)

var (
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	// numberRE is a run of digits with the separators of card and phone
	// numbers; digitsOf decides which it is.
	numberRE = regexp.MustCompile(`\+?\(?\d[\d \-.()]*\d`)
)

// Redact returns s with e-mail addresses, card numbers (13–19 digits
// passing the Luhn check, spaces or dashes allowed) and phone numbers
// (9–15 digits, with an optional leading + and spaces, dashes, dots or
// brackets) replaced by RedactedEmail, RedactedCard and RedactedPhone.
// Shorter digit runs (dates, prices, counts) are kept.
func Redact(s string) string {
	s = emailRE.ReplaceAllString(s, RedactedEmail)
	return numberRE.ReplaceAllStringFunc(s, func(m string) string {
		d := digitsOf(m)
		switch {
		case len(d) >= 13 && len(d) <= 19 && luhn(d):
			return RedactedCard
		case len(d) >= 9 && len(d) <= 15:
			return RedactedPhone
		}
		return m
	})
}

func digitsOf(s string) []byte {
	var d []byte
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			d = append(d, s[i]-'0')
		}
	}
	return d
}

func luhn(d []byte) bool {
	sum := 0
	for i := range d {
		v := int(d[len(d)-1-i])
		if i%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// redacting reports whether what the conversation's reads return is
// redacted: its browser reopened a saved login.
func (t *Tools) redacting(inv browserbackend.Invocation) bool {
	_, r := t.managed.gated(t.managed.session(inv.ConversationID))
	return r
}
