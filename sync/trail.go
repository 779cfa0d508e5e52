package sync

// This file renders a request's audit trail (state.Audit, as ReadTicket
// reads it) as `ticketbridge log` prints it: a table, a line per entry,
// or JSON lines, the form the status page's console answers it in too.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// WriteTrail writes trail, the audit trail of the request id, to w as a
// table, a line per entry, in trail's order (oldest first); an empty
// trail is a line saying why it may be empty.
func WriteTrail(w io.Writer, id string, trail []state.Audit) error {
	if len(trail) == 0 {
		_, err := fmt.Fprintf(w, "Nothing in the audit trail of request %s: nothing crossed for it yet, or its entries are older than TICKETBRIDGE_AUDIT_DAYS.\n", id)
		return err
	}
	fmt.Fprintf(w, "Audit trail of request %s (helpdesk %s), oldest first:\n\n", trail[0].TicketID, orDash(trail[len(trail)-1].Ref))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tDIRECTION\tWHAT\tOUTCOME\tCAUSE\tIDS\tDETAIL")
	for _, a := range trail {
		what := a.Kind
		if a.Status != "" {
			what += " → " + a.Status
		}
		if len(a.Fields) > 0 {
			what += " (" + strings.Join(a.Fields, ", ") + ")"
		}
		cause := a.Cause
		if a.Operator != "" {
			cause += " (" + a.Operator + ")"
		}
		var ids []string
		if a.MessageID != "" {
			ids = append(ids, "message "+a.MessageID)
		}
		if a.EventID != "" {
			ids = append(ids, "event "+a.EventID)
		}
		if a.IdempotencyKey != "" {
			ids = append(ids, "key "+a.IdempotencyKey)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", when(a.At), orDash(a.Direction), what, a.Outcome, cause,
			orDash(strings.Join(ids, " ")), orDash(strings.Join(strings.Fields(a.Detail), " ")))
	}
	return tw.Flush()
}

// WriteTrailJSON writes trail to w as JSON lines, one entry each, in
// trail's order: `ticketbridge log --json`, and the console's answer to
// the command at /tickets/ID/audit, which [ReadTrailJSON] reads.
func WriteTrailJSON(w io.Writer, trail []state.Audit) error {
	enc := json.NewEncoder(w)
	for _, a := range trail {
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
	return nil
}

// ReadTrailJSON reads the JSON lines [WriteTrailJSON] writes.
func ReadTrailJSON(r io.Reader) ([]state.Audit, error) {
	var out []state.Audit
	dec := json.NewDecoder(r)
	for dec.More() {
		var a state.Audit
		if err := dec.Decode(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// orDash is s, or "-" for an empty cell of a table.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when is t in local time for a table, or "-" when zero.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}
