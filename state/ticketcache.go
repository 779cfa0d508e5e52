package state

import (
	"encoding/binary"
	"hash/maphash"
	gosync "sync"
	"time"
)

// ticketCache keeps each ticket as last decoded, with a hash of the bytes
// it was decoded from. A quiet cycle reads every ticket record and nearly
// all are as the cycle before left them; a record whose bytes hash as
// before is not decoded again, which was the larger half of a quiet
// cycle's work in the engine.
//
// The hash is keyed with a seed drawn when the store opens, so no record
// can be made to collide on purpose; an entry only ever says "these bytes
// decode to this ticket", so a write that rolls back leaves nothing
// wrong behind.
//
// An entry holds the ticket packed into one string (packTicket), not the
// decoded struct: a daemon of thousands of hotels keeps every hotel's
// tickets here, and the struct with its eleven times is about three times
// the packed size. Unpacking allocates nothing: the ticket's strings are
// substrings of the packed one, and nothing can write through a string.
type ticketCache struct {
	seed maphash.Seed
	mu   gosync.Mutex
	m    map[string]cachedTicket
}

type cachedTicket struct {
	sum uint64
	// packed starts with the ticket's id, which is the entry's key too
	// (the key is a substring of it: the bytes are held once).
	packed string
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
		t := unpackTicket(e.packed, len(key))
		t.rev = max(sum, 1)
		return t, nil
	}
	t, err := decodeTicket(string(key), data)
	if err != nil {
		return Ticket{}, err
	}
	t.rev = max(sum, 1) // zero is "not read from state"
	packed, ok := packTicket(t)
	c.mu.Lock()
	if ok {
		c.m[packed[:len(t.ID)]] = cachedTicket{sum: sum, packed: packed}
	} else {
		delete(c.m, t.ID) // not packable: decoded every time
	}
	c.mu.Unlock()
	return t, nil
}

// forget drops key's entry: the ticket was deleted.
func (c *ticketCache) forget(key string) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}

// ticketTimes returns pointers to t's times, in their packed order.
func ticketTimes(t *Ticket) [11]*time.Time {
	return [11]*time.Time{&t.UpstreamUpdatedAt, &t.HelpdeskStatusAt, &t.HelpdeskEventAt, &t.AgreedAt,
		&t.ReconciledAt, &t.NextDue, &t.LastActivity, &t.ClosedAt, &t.Deleted, &t.CreatedAt, &t.UpdatedAt}
}

// ticketStrings returns pointers to t's strings but its id, in their
// packed order.
func ticketStrings(t *Ticket) [8]*string {
	return [8]*string{&t.Department, &t.Ref, &t.UpstreamStatus, &t.HelpdeskStatus,
		&t.AgreedStatus, &t.LastReconcile, &t.DueReason, &t.LastError}
}

// packTicket packs t (its revision aside) into one string: the id, then
// each other string as its length and bytes, each time as 0 (zero) or its
// nanoseconds plus one and its Unix seconds, the three counts, and the two
// flags. ok is false when a time is not in UTC: state stores UTC, and a
// time unpacked comes back in UTC, so any other would not come back the
// same.
func packTicket(t Ticket) (packed string, ok bool) {
	b := make([]byte, 0, len(t.ID)+96)
	b = append(b, t.ID...)
	for _, s := range ticketStrings(&t) {
		b = binary.AppendUvarint(b, uint64(len(*s)))
		b = append(b, *s...)
	}
	for _, tm := range ticketTimes(&t) {
		switch {
		case *tm == (time.Time{}):
			b = append(b, 0)
		case tm.Location() != time.UTC || tm.IsZero():
			return "", false
		default:
			b = binary.AppendUvarint(b, uint64(tm.Nanosecond())+1)
			b = binary.AppendVarint(b, tm.Unix())
		}
	}
	b = binary.AppendVarint(b, int64(t.QuietStreak))
	b = binary.AppendVarint(b, int64(t.Attempts))
	b = binary.AppendVarint(b, int64(t.Missing))
	var flags byte
	if t.ReconcileSoon {
		flags |= 1
	}
	if t.Retired {
		flags |= 2
	}
	return string(append(b, flags)), true
}

// unpackTicket is packTicket's inverse, for a packed string whose id is
// idLen bytes long.
func unpackTicket(p string, idLen int) Ticket {
	t := Ticket{ID: p[:idLen]}
	r := packReader{s: p, i: idLen}
	for _, s := range ticketStrings(&t) {
		n := int(r.uvarint())
		*s = p[r.i : r.i+n]
		r.i += n
	}
	for _, tm := range ticketTimes(&t) {
		if ns := r.uvarint(); ns != 0 {
			*tm = time.Unix(r.varint(), int64(ns-1)).UTC()
		}
	}
	t.QuietStreak = int(r.varint())
	t.Attempts = int(r.varint())
	t.Missing = int(r.varint())
	flags := p[r.i]
	t.ReconcileSoon, t.Retired = flags&1 != 0, flags&2 != 0
	return t
}

// packReader reads the varints of a packed string without copying it.
type packReader struct {
	s string
	i int
}

func (r *packReader) uvarint() uint64 {
	var x uint64
	for shift := uint(0); ; shift += 7 {
		c := r.s[r.i]
		r.i++
		if c < 0x80 {
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
	}
}

func (r *packReader) varint() int64 {
	u := r.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}
