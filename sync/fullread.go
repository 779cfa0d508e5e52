package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// MetaFullRead is the meta key of the full-read interval in force
// ([FullRead], as JSON).
const MetaFullRead = "full_read"

// FullRead is the full-read interval in force: the longest an open ticket
// goes without being read, whatever the lists show (a ticket backing off
// after errors waits at most this long too; one whose input the helpdesk
// refuses waits TICKETBRIDGE_QUIET_MAX). It starts as
// TICKETBRIDGE_FULL_READ_INTERVAL; each time a read finds a new message
// that no list could have signalled (updated_at stayed as stored), the
// engine halves it, down to a quarter of the configured value (and never
// below the schedule's interval), and keeps it so until the configured
// value or the schedule changes.
type FullRead struct {
	Configured time.Duration `json:"configured"`
	Effective  time.Duration `json:"effective"`
	// Unsignalled counts the changes found that no list signalled, since
	// the configured value was set.
	Unsignalled int `json:"unsignalled,omitempty"`
	// ShortenedAt is when the interval was last shortened, and Ticket one
	// of the tickets whose reads found the changes that did it.
	ShortenedAt time.Time `json:"shortened_at,omitzero"`
	Ticket      string    `json:"ticket,omitempty"`
}

// Shortened reports whether the engine shortened the interval.
func (f FullRead) Shortened() bool { return f.Effective < f.Configured }

// String says what the interval is and why, for `status` and `check`.
func (f FullRead) String() string {
	if !f.Shortened() {
		s := fmt.Sprintf("every open ticket is read at least every %s", f.Effective)
		if f.Unsignalled > 0 {
			s += fmt.Sprintf(" (%d changes found that no list showed)", f.Unsignalled)
		}
		return s
	}
	return fmt.Sprintf("every open ticket is read at least every %s, shortened from %s at %s: %d reads found a change that no list showed (last on ticket %s); the API does not move updated_at on every change",
		f.Effective, f.Configured, f.ShortenedAt.Local().Format(time.DateTime), f.Unsignalled, f.Ticket)
}

// readFullRead returns the stored interval, or the configured one when
// none is stored or the configuration changed since; changed reports
// whether the result differs from what is stored.
func readFullRead(tx *state.Tx, configured, interval time.Duration) (f FullRead, changed bool, err error) {
	def := FullRead{Configured: configured, Effective: configured}
	v, ok, err := tx.Meta(MetaFullRead)
	if err != nil || !ok {
		return def, false, err
	}
	if json.Unmarshal([]byte(v), &f) != nil || f.Configured != configured || f.Effective < min(interval, configured) || f.Effective > configured {
		return def, true, nil
	}
	return f, false, nil
}

func putFullRead(tx *state.Tx, f FullRead) error {
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return tx.SetMeta(MetaFullRead, string(body))
}

// ReadFullRead returns the full-read interval a state file holds, for
// `status`; configured is TICKETBRIDGE_FULL_READ_INTERVAL.
func ReadFullRead(ctx context.Context, st *state.Store, configured time.Duration) (FullRead, error) {
	var f FullRead
	err := st.View(ctx, func(tx *state.Tx) error {
		var err error
		f, _, err = readFullRead(tx, configured, 0)
		return err
	})
	return f, err
}

// note counts n unsignalled changes found at now, the last on ticket, and
// halves the interval unless it is at its floor; it reports whether it
// shortened it.
func (f *FullRead) note(n int, ticket string, now time.Time, interval time.Duration) bool {
	f.Unsignalled += n
	floor := max(f.Configured/4, interval)
	if f.Effective <= floor {
		return false
	}
	f.Effective = max(f.Effective/2, floor)
	f.ShortenedAt, f.Ticket = now, ticket
	return true
}
