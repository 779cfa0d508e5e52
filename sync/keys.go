package sync

import (
	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// KeyNamespace is the UUIDv5 namespace of every Idempotency-Key the engine
// derives. It never changes: a changed namespace would make every entry
// journaled before the change look new to the API.
var KeyNamespace = uuid.MustParse("6f0c2a57-3b8e-4f7d-9d8a-1b4e5c2f7a90")

// IdempotencyKey returns the Idempotency-Key of helpdesk event eventID on
// helpdesk ticket ref of adapter adapterName: a UUIDv5 over
// adapterName + "\x00" + ref + "\x00" + eventID in [KeyNamespace]. The same
// event always gets the same key, across retries, restarts and a lost state
// file, so the API creates its message once.
func IdempotencyKey(adapterName string, ref adapters.Ref, eventID string) string {
	return uuid.NewSHA1(KeyNamespace, []byte(adapterName+"\x00"+string(ref)+"\x00"+eventID)).String()
}
