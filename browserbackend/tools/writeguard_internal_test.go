package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWriteReasonTable(t *testing.T) {
	cases := []struct {
		name  string
		op    string
		f     elementFacts
		enter bool
		write bool
	}{
		{"submit button of a form", "click", elementFacts{Words: "Continue", Tag: "button", InForm: true, Submits: true}, false, true},
		{"buy", "click", elementFacts{Words: "Buy now", Tag: "button"}, false, true},
		{"purchase link", "click", elementFacts{Words: "Complete purchase", Tag: "a"}, false, true},
		{"delete", "click", elementFacts{Words: "Delete account", Tag: "button"}, false, true},
		{"send", "click", elementFacts{Words: "Send", Tag: "button"}, false, true},
		{"confirm", "click", elementFacts{Words: "Confirm order", Tag: "button"}, false, true},
		{"removes", "click", elementFacts{Words: "removes the item", Tag: "span"}, false, true},
		{"search form submit", "click", elementFacts{Words: "Go", Tag: "button", InForm: true, Submits: true, Search: true}, false, false},
		{"search form, button says submit", "click", elementFacts{Words: "Submit", Tag: "button", InForm: true, Submits: true, Search: true}, false, true},
		{"plain link", "click", elementFacts{Words: "Read the docs", Tag: "a"}, false, false},
		{"word inside another word", "click", elementFacts{Words: "Sender details, reorderable list", Tag: "a"}, false, false},
		{"type button in a form", "click", elementFacts{Words: "Show more", Tag: "button", InForm: true}, false, false},
		{"enter in a form field", "press_key", elementFacts{Tag: "input", InForm: true}, true, true},
		{"enter in a search field", "press_key", elementFacts{Tag: "input", InForm: true, Search: true}, true, false},
		{"enter in a textarea", "press_key", elementFacts{Tag: "textarea", InForm: true}, true, false},
		{"a letter on a delete button", "press_key", elementFacts{Words: "Delete", Tag: "button"}, false, false},
		{"enter on a send button", "press_key", elementFacts{Words: "Send", Tag: "button"}, true, true},
		{"typing into a field", "type", elementFacts{Words: "Query", Tag: "input", InForm: true}, false, false},
		{"typing with submit", "type", elementFacts{Words: "Query", Tag: "input", InForm: true}, true, true},
		{"select a payment plan", "select_option", elementFacts{Words: "Pay monthly", Tag: "select"}, false, true},
		{"select a colour", "select_option", elementFacts{Words: "Colour", Tag: "select", InForm: true}, false, false},
	}
	for _, c := range cases {
		got := writeReason(c.op, c.f, c.enter)
		assert.Equal(t, c.write, got != "", "%s: reason %q", c.name, got)
	}
}

func TestCredentialShapeTable(t *testing.T) {
	for text, shaped := range map[string]bool{
		"AKIAIOSFODNN7EXAMPLE":                     true,
		"my key is ASIAY34FZKBOKMUTVV7A ok":        true,
		"sk-proj-abcdefghijklmnop1234":             true,
		"sk-abcdefghijklmnopqrstuvwxyz012345":      true,
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789": true,
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U": true,
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE...":                                                     true,
		"-----BEGIN PRIVATE KEY-----":                                                                  true,
		"-----BEGIN OPENSSH PRIVATE KEY-----":                                                          true,
		"hello world":                                                                                  false,
		"ask-me later":                                                                                 false,
		"The AKIA prefix is how AWS keys start":                                                        false,
		"-----BEGIN CERTIFICATE-----":                                                                  false,
		"eyJ is how a JWT starts":                                                                      false,
		"sk-short":                                                                                     false,
	} {
		assert.Equal(t, shaped, credentialShape(text) != "", text)
	}
}

func TestCredentialRedactsWhenPrinted(t *testing.T) {
	c := Credential{Username: "alice", Password: "hunter2-secret"}
	for _, s := range []string{c.String(), c.GoString(), c.LogValue().String()} {
		assert.NotContains(t, s, "hunter2")
		assert.NotContains(t, s, "alice")
	}
}
