package adapters

import (
	"context"
	"fmt"
)

// HeldError says that the helpdesk refused a change until somebody there
// does something, such as a Zendesk account refusing to solve a ticket
// while a field required on solve is empty. The adapter has left the
// ticket as it was and told the team in the ticket; the engine retries the
// change with its usual backoff, and the retry succeeds once the team did
// what Need says. It is not [ErrInvalid]: the same call succeeds later.
// It holds no credential.
type HeldError struct {
	Ref  Ref    // the ticket
	Op   string // what was held, e.g. "set status done"
	Need string // what the helpdesk needs, in its own words
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s of ticket %s held by the helpdesk: %s", e.Op, e.Ref, e.Need)
}

// Holder is implemented by adapters that can report the changes their
// helpdesk holds back (see [HeldError]). Held lists those still held, as
// the adapter last saw them, one per ticket and operation; a change leaves
// the list when it went through. `ticketbridge check`, the status snapshot
// and the metrics show them.
type Holder interface {
	Held(ctx context.Context) []HeldError
}
