package guard

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRefusalsAreBounded(t *testing.T) {
	var r refusals
	for i := range maxRefusals + 1 {
		r.add("h"+strconv.Itoa(i)+".test:443", &Error{Code: CodeForbidden, Rule: strconv.Itoa(i)})
	}
	assert.Nil(t, r.get("h0.test:443"), "the oldest is forgotten")
	assert.Len(t, r.byKey, maxRefusals)
	assert.Len(t, r.order, maxRefusals)
	r.add("H1.Test.:443", &Error{Code: CodeForbidden, Rule: "again"})
	assert.Equal(t, "again", r.get("h1.test:443").Rule, "a host refused again keeps one entry, with the latest refusal")
	assert.Len(t, r.order, maxRefusals)
	r.add("no-port.test", &Error{Code: CodeForbidden})
	assert.Len(t, r.order, maxRefusals, "a target without a port is not remembered")
}
