package saas

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Input checks the input of the Helpdesk methods against what the
// helpdesk can keep in a marker. Name is the helpdesk's name in errors,
// e.g. "zendesk"; Valid reports whether an id can stand in a marker (and
// wherever else the helpdesk keeps it); nil means [adapters.MarkerToken].
// Every error wraps [adapters.ErrInvalid], except that when Life is set
// and closed every check fails with [ErrClosed] first.
type Input struct {
	Name  string
	Valid func(string) bool
	Life  *Life
}

func (in Input) open() error {
	if in.Life == nil {
		return nil
	}
	return in.Life.Check(in.Name + " adapter")
}

func (in Input) valid(s string) bool {
	if in.Valid != nil {
		return in.Valid(s)
	}
	return adapters.MarkerToken(s)
}

// UpstreamID checks the upstream ticket id of EnsureTicket or Lookup; op
// is "ensure" or "look up".
func (in Input) UpstreamID(op, id string) error {
	if err := in.open(); err != nil {
		return err
	}
	if !in.valid(id) {
		return fmt.Errorf("%s %s ticket: upstream ticket id %q is empty, too long or holds white space or brackets: %w", op, in.Name, id, adapters.ErrInvalid)
	}
	return nil
}

// Messages checks the messages of an Append to ref: each has an upstream
// id that can stand in a marker and a body.
func (in Input) Messages(ref adapters.Ref, msgs []adapters.Message) error {
	if err := in.open(); err != nil {
		return err
	}
	for i, m := range msgs {
		if !in.valid(m.UpstreamID) {
			return fmt.Errorf("append to %s ticket %s: message %d: upstream id %q is empty, too long or holds white space or brackets: %w", in.Name, ref, i+1, m.UpstreamID, adapters.ErrInvalid)
		}
		if strings.TrimSpace(m.Body) == "" {
			return fmt.Errorf("append to %s ticket %s: message %s has an empty body: %w", in.Name, ref, m.UpstreamID, adapters.ErrInvalid)
		}
	}
	return nil
}

// Sent checks the arguments of MarkSent: both ids can stand in a sent
// marker ("" is a status change's upstream message id).
func (in Input) Sent(ref adapters.Ref, eventID, upstreamMessageID string) error {
	if err := in.open(); err != nil {
		return err
	}
	if !in.valid(eventID) || (upstreamMessageID != "" && !in.valid(upstreamMessageID)) || upstreamMessageID == adapters.MarkerNoMessage {
		return fmt.Errorf("mark event %q sent on %s ticket %s: the event id or upstream message id %q is empty or holds white space or brackets: %w", eventID, in.Name, ref, upstreamMessageID, adapters.ErrInvalid)
	}
	return nil
}

// ParseRef reads a Ref of vendor name: a ticket number as [RefOf] writes
// it. Anything else names no ticket the helpdesk can have
// ([adapters.ErrNotFound]).
func ParseRef(name string, ref adapters.Ref) (int64, error) {
	id, err := strconv.ParseInt(string(ref), 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != string(ref) {
		return 0, fmt.Errorf("%s ticket %q: not a ticket number: %w", name, ref, adapters.ErrNotFound)
	}
	return id, nil
}

// RefOf is the Ref of ticket number id.
func RefOf(id int64) adapters.Ref { return adapters.Ref(strconv.FormatInt(id, 10)) }
