package eventhub

import (
	"fmt"
	"strconv"
	"strings"
)

// maxEventIDLen bounds a Last-Event-ID value the hub will look at.
const maxEventIDLen = 64

// formatEventID renders the id of an event: "<epoch>-<seq>", where epoch is
// the hub's random hex tag and seq its decimal sequence number.
func formatEventID(epoch string, seq uint64) string {
	return epoch + "-" + strconv.FormatUint(seq, 10)
}

// ParseEventID splits an event id issued by an in-process hub ("<epoch>-<seq>":
// 1–16 lowercase hex digits, a dash, a decimal uint64 without sign or
// leading zeros) into its parts. Anything else — including values longer
// than 64 bytes — is ErrInvalidEventID. It decodes the Last-Event-ID request
// header, which is client input.
func ParseEventID(s string) (epoch string, seq uint64, err error) {
	if len(s) == 0 || len(s) > maxEventIDLen {
		return "", 0, fmt.Errorf("%w: length %d", ErrInvalidEventID, len(s))
	}
	i := strings.LastIndexByte(s, '-')
	if i < 1 || i > 16 || i == len(s)-1 {
		return "", 0, fmt.Errorf("%w: want <epoch>-<seq>", ErrInvalidEventID)
	}
	epoch, num := s[:i], s[i+1:]
	for j := 0; j < len(epoch); j++ {
		c := epoch[j]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", 0, fmt.Errorf("%w: epoch is not lowercase hex", ErrInvalidEventID)
		}
	}
	for j := 0; j < len(num); j++ {
		if c := num[j]; c < '0' || c > '9' {
			return "", 0, fmt.Errorf("%w: seq is not decimal", ErrInvalidEventID)
		}
	}
	if len(num) > 1 && num[0] == '0' {
		return "", 0, fmt.Errorf("%w: seq has a leading zero", ErrInvalidEventID)
	}
	seq, perr := strconv.ParseUint(num, 10, 64)
	if perr != nil {
		return "", 0, fmt.Errorf("%w: seq out of range", ErrInvalidEventID)
	}
	return epoch, seq, nil
}
