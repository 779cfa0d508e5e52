package state

import (
	"encoding/binary"
	"hash/maphash"
	"math"
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
// tickets here, and the struct with its thirteen times is about three times
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
func ticketTimes(t *Ticket) [13]*time.Time {
	return [13]*time.Time{&t.UpstreamUpdatedAt, &t.HelpdeskStatusAt, &t.HelpdeskEventAt, &t.AgreedAt,
		&t.ReconciledAt, &t.NextDue, &t.LastActivity, &t.ClosedAt, &t.Deleted, &t.CreatedAt, &t.UpdatedAt,
		&t.GuestWroteAt, &t.AnsweredAt}
}

// ticketStrings returns pointers to t's strings but its id, in their
// packed order.
func ticketStrings(t *Ticket) [8]*string {
	return [8]*string{&t.Department, &t.Ref, &t.UpstreamStatus, &t.HelpdeskStatus,
		&t.AgreedStatus, &t.LastReconcile, &t.DueReason, &t.LastError}
}

// packTicket packs t (its revision aside) into one string: the id, then
// each other string as its length and bytes, each time as 0 (zero) or its
// nanoseconds plus one and its Unix seconds, the three counts, and the
// flags; then, when the fields were carried (flag 4), their strings, their
// two times and, when rated (flag 8), the rating's bits. ok is false when
// a time is not in UTC: state stores UTC, and a time unpacked comes back
// in UTC, so any other would not come back the same.
func packTicket(t Ticket) (packed string, ok bool) {
	b := make([]byte, 0, len(t.ID)+96)
	b = append(b, t.ID...)
	ss, ts := ticketStrings(&t), ticketTimes(&t)
	b = packStrings(b, ss[:])
	if b, ok = packTimes(b, ts[:]); !ok {
		return "", false
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
	c := &t.Carried
	if c.Known() {
		flags |= 4
	}
	if c.Rated {
		flags |= 8
	}
	// What operators' commands wrote, in one block: most records have
	// none of it.
	operated := t.Commands != 0 || t.Paused != (time.Time{}) || t.PausedBy != "" || t.Unlinked != (time.Time{}) || t.UnlinkedBy != "" || t.ConnectRef != ""
	if operated {
		flags |= 16
	}
	if t.UnlinkNoted {
		flags |= 32
	}
	b = append(b, flags)
	if operated {
		os := operatorStrings(&t)
		b = packStrings(b, os[:])
		if b, ok = packTimes(b, []*time.Time{&t.Paused, &t.Unlinked}); !ok {
			return "", false
		}
		b = binary.AppendVarint(b, int64(t.Commands))
	}
	if !c.Known() {
		return string(b), true
	}
	cs := carriedStrings(c)
	b = packStrings(b, cs[:])
	if b, ok = packTimes(b, []*time.Time{&c.At, &c.Due}); !ok {
		return "", false
	}
	if c.Rated {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Rating))
	}
	b = append(b, c.Unsure)
	return string(b), true
}

// operatorStrings returns pointers to the strings operators' commands
// write, in their packed order.
func operatorStrings(t *Ticket) [3]*string {
	return [3]*string{&t.PausedBy, &t.UnlinkedBy, &t.ConnectRef}
}

// carriedStrings returns pointers to the strings of carried fields, in
// their packed order.
func carriedStrings(c *Fields) [4]*string {
	return [4]*string{&c.Department, &c.Title, &c.Comment, &c.Priority}
}

func packStrings(b []byte, ss []*string) []byte {
	for _, s := range ss {
		b = binary.AppendUvarint(b, uint64(len(*s)))
		b = append(b, *s...)
	}
	return b
}

func packTimes(b []byte, ts []*time.Time) ([]byte, bool) {
	for _, tm := range ts {
		switch {
		case *tm == (time.Time{}):
			b = append(b, 0)
		case tm.Location() != time.UTC || tm.IsZero():
			return nil, false
		default:
			b = binary.AppendUvarint(b, uint64(tm.Nanosecond())+1)
			b = binary.AppendVarint(b, tm.Unix())
		}
	}
	return b, true
}

// unpackTicket is packTicket's inverse, for a packed string whose id is
// idLen bytes long.
func unpackTicket(p string, idLen int) Ticket {
	t := Ticket{ID: p[:idLen]}
	r := packReader{s: p, i: idLen}
	ss, ts := ticketStrings(&t), ticketTimes(&t)
	r.strings(ss[:])
	r.times(ts[:])
	t.QuietStreak = int(r.varint())
	t.Attempts = int(r.varint())
	t.Missing = int(r.varint())
	flags := p[r.i]
	r.i++
	t.ReconcileSoon, t.Retired = flags&1 != 0, flags&2 != 0
	if flags&16 != 0 {
		os := operatorStrings(&t)
		r.strings(os[:])
		r.times([]*time.Time{&t.Paused, &t.Unlinked})
		t.Commands = int(r.varint())
	}
	t.UnlinkNoted = flags&32 != 0
	if flags&4 == 0 {
		return t
	}
	c := &t.Carried
	cs := carriedStrings(c)
	r.strings(cs[:])
	r.times([]*time.Time{&c.At, &c.Due})
	if flags&8 != 0 {
		c.Rated = true
		var bits uint64
		for i := range 8 {
			bits |= uint64(p[r.i+i]) << (8 * i)
		}
		c.Rating = math.Float64frombits(bits)
		r.i += 8
	}
	c.Unsure = p[r.i]
	return t
}

func (r *packReader) strings(ss []*string) {
	for _, s := range ss {
		n := int(r.uvarint())
		*s = r.s[r.i : r.i+n]
		r.i += n
	}
}

func (r *packReader) times(ts []*time.Time) {
	for _, tm := range ts {
		if ns := r.uvarint(); ns != 0 {
			*tm = time.Unix(r.varint(), int64(ns-1)).UTC()
		}
	}
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
