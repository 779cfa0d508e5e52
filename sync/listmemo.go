package sync

import (
	"context"
	"encoding/binary"
	"hash/maphash"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// A quiet cycle's lists are, byte for byte, the lists of the cycle before:
// decoding them again only to find that they agree with state was most of
// what a quiet hotel-cycle cost. So a cycle whose lists agreed with state
// keeps a digest of each (listMemo), and the next cycle first asks the same
// lists again (replayLists). When every answer has the digest kept and the
// state discover compares them with is the same (its listKey), the lists
// would decode to what agreed with that state before, and discover plans
// from state alone. Otherwise the answers are decoded where listQueue asks
// for them, and no list is asked twice.
//
// "Agreed" is strict (see discoverPlan.agree): no listed ticket differs
// from its record, none is new to state, and none is missing from a whole
// list; what discover plans from the lists is then a function of the lists
// and of the fields listKey covers, and the same lists and key plan the
// same nothing. A digest is a 64-bit hash (guestapi.ListDigest): two
// different answers pass for one with a chance of 2⁻⁶⁴ a list, and even
// then the change is read at the ticket's next full read.

// rawLister is an API whose list answers can be compared before they are
// decoded ([guestapi.Client]). An API without it has its lists decoded
// every cycle.
type rawLister interface {
	ListTicketsRaw(ctx context.Context, opt guestapi.ListOptions) (*guestapi.RawList, error)
}

// listMemo is what a cycle whose lists agreed with state kept of them.
type listMemo struct {
	key    uint64     // listKey of the state they agreed with
	lists  []listSeen // every list the cycle asked
	listed int        // the tickets they showed, for the report
}

// listSeen is one list a cycle asked and the digest of its answer.
type listSeen struct {
	opt    guestapi.ListOptions
	digest guestapi.ListDigest
}

// replayedList is the answer replayLists had to one list: the raw answer,
// or the error of asking.
type replayedList struct {
	raw *guestapi.RawList
	err error
}

// keySeed seeds the listKey of every engine of the process.
var keySeed = maphash.MakeSeed()

// listKey hashes what planDiscover compares the lists with: the first
// cycle's start and, of each tracked ticket (in id order), the fields it
// reads before it plans a change (for the carried fields, the time they
// were carried, which every carry changes).
func listKey(in discoverInput) uint64 {
	var h maphash.Hash
	h.SetSeed(keySeed)
	var b [9]byte
	if in.first {
		b[0] = 1
	}
	binary.LittleEndian.PutUint64(b[1:], uint64(in.importSince.UnixNano()))
	_, _ = h.Write(b[:])
	for i := range in.tracked {
		t := &in.tracked[i]
		_, _ = h.WriteString(t.ID)
		_ = h.WriteByte(0)
		_, _ = h.WriteString(t.UpstreamStatus)
		_ = h.WriteByte(0)
		_, _ = h.WriteString(t.Department)
		_ = h.WriteByte(0)
		b[0] = 0
		if t.Ref != "" {
			b[0] |= 1
		}
		if t.Retired {
			b[0] |= 2
		}
		if t.UpstreamUpdatedAt.IsZero() {
			b[0] |= 4
		}
		if !t.Paused.IsZero() {
			b[0] |= 8
		}
		if !t.Unlinked.IsZero() {
			b[0] |= 16
		}
		binary.LittleEndian.PutUint64(b[1:], uint64(t.UpstreamUpdatedAt.UnixNano()))
		_, _ = h.Write(b[:])
		// When the fields were last carried: planDiscover compares the
		// listed fields with them (a carry changes the time).
		binary.LittleEndian.PutUint64(b[1:], uint64(t.Carried.At.UnixNano()))
		_, _ = h.Write(b[1:])
	}
	return h.Sum64()
}

// replayLists asks again every list of the last cycle whose lists agreed
// with state, when the state read now is the one they agreed with. It
// reports true when every answer is the one that cycle had: the lists show
// nothing new. Otherwise the answers, and the errors of asking, are kept
// for listQueue, which takes them in place of asking again.
func (c *cycle) replayLists(in discoverInput) bool {
	m := c.e.lists
	if m == nil || in.key != m.key || in.first {
		return false
	}
	got := make([]replayedList, len(m.lists))
	ask := func(i int) {
		if c.stopped() {
			got[i].err = c.ctx.Err()
			return
		}
		got[i].raw, got[i].err = c.e.api.ListTicketsRaw(c.ctx, m.lists[i].opt)
	}
	if len(got) == 1 {
		ask(0)
	} else {
		idx := make([]int, len(got))
		for i := range idx {
			idx[i] = i
		}
		forEach(c.ctx, c.e.workers, c.e.cfg.Concurrency, idx, ask)
	}
	same := true
	for i, r := range got {
		if r.err != nil || r.raw == nil || r.raw.Digest() != m.lists[i].digest {
			same = false
			break
		}
	}
	if same {
		for _, r := range got {
			c.e.api.done(nil)
			r.raw.Release()
		}
		return true
	}
	c.replayed = make(map[guestapi.ListOptions]replayedList, len(got))
	for i, r := range got {
		if r.raw != nil || r.err != nil {
			c.replayed[m.lists[i].opt] = r
		}
	}
	return false
}

// fetchList returns the tickets of list opt: the answer replayLists had,
// else the API's. It notes the answer's digest for the next cycle.
func (c *cycle) fetchList(opt guestapi.ListOptions) ([]guestapi.Ticket, error) {
	if !c.e.rawLists {
		return c.e.api.ListTickets(c.ctx, opt)
	}
	c.mu.Lock()
	r, ok := c.replayed[opt]
	delete(c.replayed, opt)
	c.mu.Unlock()
	if !ok {
		r.raw, r.err = c.e.api.ListTicketsRaw(c.ctx, opt)
	}
	if r.err != nil {
		return nil, r.err
	}
	defer r.raw.Release()
	ts, err := r.raw.Tickets()
	c.e.api.done(err)
	if err == nil {
		c.mu.Lock()
		c.lists = append(c.lists, listSeen{opt: opt, digest: r.raw.Digest()})
		c.mu.Unlock()
	}
	return ts, err
}

// endLists gives back the answers replayLists had that listQueue did not
// take (the queue's lists changed shape), each counted an answer.
func (c *cycle) endLists() {
	for opt, r := range c.replayed {
		if r.raw != nil {
			c.e.api.done(nil)
			r.raw.Release()
		}
		delete(c.replayed, opt)
	}
}

// keepLists records, after discover planned plan p from in, what the next
// cycle replays: the lists of this cycle when they agreed with state,
// every one asked and answered; nothing otherwise.
func (c *cycle) keepLists(in discoverInput, p discoverPlan) {
	switch {
	case !c.e.rawLists || in.unchanged:
		return // nothing to keep, or kept already
	case in.listOK && p.agree && !in.first:
		c.e.lists = &listMemo{key: in.key, lists: c.lists, listed: len(in.listed)}
	default:
		c.e.lists = nil
	}
}
