package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

// A command about an element that failed in transport keeps its class: only
// the browser's answer means the element is missing.
func TestElementErrNeverHidesATransportFailureAsNotFound(t *testing.T) {
	gone := &browserbackend.Error{Class: browserbackend.ClassProtocol, CDPCode: -32000, Message: "No node with given id found"}
	err := elementErr("click", "the element has no box (hidden or detached)", gone)
	assert.ErrorIs(t, err, ErrNotFound)

	lost := browserbackend.TransportError(browserbackend.CodeTransportError, "the bridge's connection ended", nil)
	err = elementErr("click", "the element has no box (hidden or detached)", lost)
	assert.NotErrorIs(t, err, ErrNotFound)
	assert.ErrorIs(t, err, browserbackend.ErrTransport)
	var te *Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, CodeBackend, te.Code)
}
