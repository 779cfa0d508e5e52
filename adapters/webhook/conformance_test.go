package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
)

// agent acts as the receiver's staff: every action is a signed inbound
// event posted to the adapter's endpoint, and what the helpdesk holds is
// the receiver's view of the deliveries it accepted.
type agent struct{ rc *receiver.Receiver }

func (a agent) send(ctx context.Context, ev webhook.InboundEvent) error {
	ev.ID = "agent-" + uuid.NewString()
	ans, err := a.rc.Send(ctx, ev)
	if err != nil {
		return err
	}
	if !ans.OK || ans.Duplicate {
		return fmt.Errorf("inbound answer %+v, want a new event stored", ans)
	}
	return nil
}

func (a agent) Reply(ctx context.Context, ref adapters.Ref, author, body string) error {
	return a.send(ctx, webhook.InboundEvent{Type: webhook.InboundReply, TicketID: string(ref), AuthorName: author, Body: body})
}

func (a agent) Note(ctx context.Context, ref adapters.Ref, author, body string) error {
	return a.send(ctx, webhook.InboundEvent{Type: webhook.InboundNote, TicketID: string(ref), AuthorName: author, Body: body})
}

func (a agent) SetStatus(ctx context.Context, ref adapters.Ref, author, status string) error {
	return a.send(ctx, webhook.InboundEvent{Type: webhook.InboundStatus, TicketID: string(ref), AuthorName: author, Status: status})
}

func (a agent) Read(_ context.Context, ref adapters.Ref) (adaptertest.Snapshot, error) {
	tk, ok := a.rc.Ticket(string(ref))
	if !ok {
		return adaptertest.Snapshot{}, adapters.ErrNotFound
	}
	snap := adaptertest.Snapshot{Status: tk.Status}
	for _, m := range tk.Messages {
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{
			Text:   fmt.Sprintf("%s (%s), %s\n%s", m.AuthorName, m.AuthorType, m.CreatedAt, m.Body),
			Public: m.Public,
		})
	}
	// Each ticket.updated the receiver accepted, as the note a person
	// would read of it.
	for _, u := range tk.Updates {
		b, err := json.Marshal(u)
		if err != nil {
			return snap, err
		}
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{Text: string(b)})
	}
	return snap, nil
}

// ReadFields reads the fields of the last ticket.updated accepted.
func (a agent) ReadFields(_ context.Context, ref adapters.Ref) (adaptertest.HeldFields, error) {
	tk, ok := a.rc.Ticket(string(ref))
	if !ok {
		return adaptertest.HeldFields{}, adapters.ErrNotFound
	}
	f := tk.Fields
	if f == nil {
		return adaptertest.HeldFields{}, nil // nothing delivered: nothing held
	}
	h := adaptertest.HeldFields{Queue: f.Department, Title: f.TaskDescription, Rating: f.GuestRating,
		Holds: adapters.FieldSet(adapters.FieldTitle | adapters.FieldDue | adapters.FieldRating)}
	if f.TargetDueAt != nil {
		due, err := time.Parse(time.RFC3339Nano, *f.TargetDueAt)
		if err != nil {
			return h, err
		}
		h.Due = due
	}
	return h, nil
}

// TestConformance runs the shared suite: one adapter instance serves the
// inbound endpoint for the whole run, and every instance the suite opens
// shares its webhook directory and receiver, as a restart would.
func TestConformance(t *testing.T) {
	for _, limit := range []int{0, 1} { // the default page, and one event per Changes call
		t.Run(map[int]string{0: "DefaultLimit", 1: "LimitOfOne"}[limit], func(t *testing.T) {
			r := newRig(t, false)
			opts := r.opts
			opts.Listener = nil
			opts.ChangesLimit = limit
			adaptertest.Run(t, adaptertest.Harness{
				New:    func(testing.TB) adapters.Helpdesk { return r.open(opts) },
				Agent:  agent{r.rc},
				Status: adapters.APIStatusMap(),
				Caps:   adaptertest.Caps{MarkSent: true, AuthorName: true, NoStatus: true},
				// The receiver holds the fields as ticket.updated says;
				// the department too, but it has no queues to route to.
				Fields: adaptertest.FieldsHarness{AsNote: true},
			})
		})
	}
}
