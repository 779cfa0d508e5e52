package state

import (
	"hash/maphash"
	gosync "sync"
)

// ticketCache keeps each ticket as last decoded, with a hash of the bytes
// it was decoded from. A quiet cycle reads every ticket record and nearly
// all are as the cycle before left them; a record whose bytes hash as before is not decoded again, which
// was the larger half of a quiet cycle's work in the engine.
//
// The hash is keyed with a seed drawn when the store opens, so no record
// can be made to collide on purpose; an entry only ever says "these bytes
// decode to this ticket", so a write that rolls back leaves nothing
// wrong behind. A Ticket holds no slices, maps or pointers: the copies
// handed out share nothing with the cache.
type ticketCache struct {
	seed maphash.Seed
	mu   gosync.Mutex
	m    map[string]cachedTicket
}

type cachedTicket struct {
	sum uint64
	t   Ticket
}

func newTicketCache() *ticketCache {
	return &ticketCache{seed: maphash.MakeSeed(), m: map[string]cachedTicket{}}
}

// decode returns the ticket record data under key decodes to, decoding it
// only when it changed since the last call for key.
func (c *ticketCache) decode(key []byte, data []byte) (Ticket, error) {
	sum := maphash.Bytes(c.seed, data)
	c.mu.Lock()
	e, ok := c.m[string(key)]
	c.mu.Unlock()
	if ok && e.sum == sum {
		return e.t, nil
	}
	k := string(key)
	t, err := decodeTicket(k, data)
	if err != nil {
		return Ticket{}, err
	}
	t.rev = max(sum, 1) // zero is "not read from state"
	c.mu.Lock()
	c.m[k] = cachedTicket{sum: sum, t: t}
	c.mu.Unlock()
	return t, nil
}

// forget drops key's entry: the ticket was deleted.
func (c *ticketCache) forget(key string) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}
