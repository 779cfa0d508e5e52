package sync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

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

// payload is what an entry sends upstream, in the form that is journaled
// and hashed.
type payload struct {
	Kind           adapters.EventKind `json:"kind"`
	Body           string             `json:"body,omitempty"`
	AuthorName     string             `json:"author_name,omitempty"`
	VisibleToGuest bool               `json:"visible_to_guest,omitempty"`
	Status         string             `json:"status,omitempty"`
}

// hash returns the hex SHA-256 of p's JSON form: two journal entries with
// the same hash send the same thing.
func (p payload) hash() string {
	b, _ := json.Marshal(p) // a struct of strings and a bool always encodes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
