package saas

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Cursor is the common shape of the SaaS adapters' change cursors (rt
// frames its cursor the same way), "<prefix><head>:<item>,<item>,...": a
// position (a time, in the unit the adapter chooses, or rt's transaction
// id) and the events at or near it already handed out, each adapter giving
// the items their meaning.
type Cursor struct {
	Head  int64
	Items []string
}

// Format writes c after prefix.
func (c Cursor) Format(prefix string) adapters.Cursor {
	return adapters.Cursor(prefix + strconv.FormatInt(c.Head, 10) + ":" + strings.Join(c.Items, ","))
}

// ParseCursor reads a cursor Format wrote with prefix; ok is false for the
// empty cursor (the beginning). A cursor of another shape is an error
// wrapping [adapters.ErrInvalid]; what names the adapter in it.
func ParseCursor(s adapters.Cursor, prefix, what string) (c Cursor, ok bool, err error) {
	if s == "" {
		return Cursor{}, false, nil
	}
	bad := fmt.Errorf("read %s cursor %q: not a cursor this adapter made: %w", what, s, adapters.ErrInvalid)
	rest, found := strings.CutPrefix(string(s), prefix)
	if !found {
		return Cursor{}, false, bad
	}
	head, items, found := strings.Cut(rest, ":")
	if !found {
		return Cursor{}, false, bad
	}
	n, err := strconv.ParseInt(head, 10, 64)
	if err != nil || n < 0 {
		return Cursor{}, false, bad
	}
	c.Head = n
	if items != "" {
		c.Items = strings.Split(items, ",")
	}
	return c, true, nil
}

// BadCursor is the error of a cursor whose items do not parse.
func BadCursor(s adapters.Cursor, what string) error {
	return fmt.Errorf("read %s cursor %q: not a cursor this adapter made: %w", what, s, adapters.ErrInvalid)
}
