package tabs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// ID is a browser tab id as the extension clients send it: a
// JSON number in some answers (Vellum.listTabs) and a decimal string in
// others (Vellum.createTab, Vellum.findTab). It decodes from both and
// encodes as a number, so ids compare equal after normalising. Zero means
// no tab.
type ID int

// UnmarshalJSON accepts a JSON integer, a string of decimal digits, or
// null (zero); anything else is an error.
func (t *ID) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "null" {
		*t = 0
		return nil
	}
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		data = []byte(s)
	}
	n, err := strconv.Atoi(string(data))
	if err != nil || n < 0 {
		return fmt.Errorf("tabs: tab id %s is not a decimal number", data)
	}
	*t = ID(n)
	return nil
}

// ParseID reports whether s, a cdpSessionId, names a tab: a string of
// decimal digits. Anything else names a CDP target or session.
func ParseID(s string) (ID, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return ID(n), err == nil
}
