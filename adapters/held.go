package adapters

import (
	"context"
	"fmt"
	"time"
)

// HeldError says that the helpdesk holds a change until somebody there
// does something. Two kinds exist:
//
//   - A change the helpdesk refused, such as a Zendesk account refusing to
//     solve a ticket while a field required on solve is empty. The adapter
//     has left the ticket as it was and told the team in the ticket; the
//     engine retries the change with its usual backoff, and the retry
//     succeeds once the team did what Need says. It is not [ErrInvalid]:
//     the same call succeeds later.
//   - A change the team handed the bridge as a file that the adapter could
//     not use and set aside (File is set), such as an outbox file of the
//     files helpdesk naming no known ticket, or a mail the email helpdesk
//     does not carry (Mail is set). Nothing retries it: it stays held
//     until the team fixes the file and hands it over again, or removes
//     it.
//
// It holds no credential and none of the text of the change.
type HeldError struct {
	Ref  Ref    // the ticket; "" when the change names none the adapter knows
	Op   string // what was held, e.g. "set status done", "outbox file reply.txt"
	Need string // what the helpdesk needs, in its own words
	// File is where a change set aside waits, relative to the helpdesk's
	// folder (e.g. "outbox/failed/reply.txt"); "" for a refused change.
	File string `json:",omitempty"`
	// Since is when the change was set aside; zero when unknown.
	Since time.Time `json:",omitzero"`
	// Mail says that File is a mail in a folder of the helpdesk's mailbox
	// (the email helpdesk: "TicketBridge Set aside/12", the folder and the
	// mail's UID) rather than a file.
	Mail bool `json:",omitempty"`
}

func (e *HeldError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s set aside as %s: %s", e.Op, e.File, e.Need)
	}
	return fmt.Sprintf("%s of ticket %s held by the helpdesk: %s", e.Op, e.Ref, e.Need)
}

// SetAside reports whether e is a file the adapter set aside (see
// [HeldError]).
func (e HeldError) SetAside() bool { return e.File != "" }

// Holder is implemented by adapters that can report the changes their
// helpdesk holds back (see [HeldError]). Held lists those still held, as
// the adapter last saw them, one per ticket and operation or per file set
// aside; a change leaves the list when it went through, a file when the
// team took it away. `ticketbridge check`, `ticketbridge status`, the
// status page and the metrics show them.
type Holder interface {
	Held(ctx context.Context) []HeldError
}

// SetAsideCounter is implemented by Holders that set aside files the team
// hands the bridge (see [HeldError]). SetAside counts the files set aside
// since the adapter was made, as it happens, so that a file set aside and
// taken away between two looks at Held is counted all the same; the
// daemon exports it as ticketbridge_outbox_failed_total.
type SetAsideCounter interface {
	Holder
	SetAside() uint64
}
