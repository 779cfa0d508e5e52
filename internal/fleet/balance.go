package fleet

import (
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/state"
)

// balancer balances the hotels of a keeper's database with the fleet
// (see lease.Balancer). Its methods take f.mu and never wait for a hotel
// or a database.
type balancer struct{ f *Fleet }

// namesOn returns the leased hotels of k's database: those of the
// directory, and those running here under a lease of it. Hold f.mu.
func (f *Fleet) namesOn(k *lease.Keeper) []string {
	names := make([]string, 0, len(f.leased))
	for name, h := range f.leased {
		if h.Daemon.State.Value() == k.URL() {
			names = append(names, name)
		}
	}
	for name, rh := range f.hotels {
		if rh.lease != nil && rh.lease.Keeper() == k {
			if _, ok := f.leased[name]; !ok {
				names = append(names, name)
			}
		}
	}
	return names
}

// assignment is a share-out of a database's hotels over its replicas.
type assignment struct {
	replicas []string
	owner    map[string]string // hotel -> replica
}

// assign returns lease.Assign(names, replicas), the last answer for k's
// database while its hotels and replicas stay the same: a keeper asks
// every tick, and at thousands of hotels computing it anew was most of
// what balancing allocated. names holds no name twice. Hold f.mu.
func (f *Fleet) assign(k *lease.Keeper, names, replicas []string) map[string]string {
	if a, ok := f.assigned[k.URL()]; ok && slices.Equal(a.replicas, replicas) && len(a.owner) == len(names) {
		same := true
		for _, n := range names {
			if _, ok := a.owner[n]; !ok {
				same = false
				break
			}
		}
		if same {
			return a.owner
		}
	}
	owner := lease.Assign(names, replicas)
	f.assigned[k.URL()] = assignment{replicas: slices.Clone(replicas), owner: owner}
	return owner
}

// retire retires k when it holds no lease (see lease.Keepers.Retire), and
// forgets its share-out. Hold f.mu.
func (f *Fleet) retire(k *lease.Keeper) bool {
	if !f.keeper.Retire(k) {
		return false
	}
	delete(f.assigned, k.URL())
	return true
}

// Failed reports that k's database could not be opened; it reports
// whether the database is no longer in use, and k is to retire.
func (b balancer) Failed(k *lease.Keeper, err error) (retire bool) {
	f := b.f
	f.mu.Lock()
	defer f.mu.Unlock()
	names := f.namesOn(k)
	if len(names) == 0 {
		return f.retire(k)
	}
	if f.one {
		// The daemon of one hotel cannot run without its database: it
		// stops with the error, as it always did; unless it is being
		// stopped, and err is the stop's (a connect cut short).
		if f.life.Err() == nil {
			f.fail(err)
		}
		return false
	}
	f.log.Error("hotels not started", slog.Any("error", err), slog.Any("hotels", names), slog.String("op", "lease"))
	for _, n := range names {
		if _, ok := f.hotels[n]; !ok {
			f.tel.DropHotel(n, err.Error())
		}
	}
	return false
}

// Plan balances the hotels of k's database after k's heartbeat and
// renewal, without waiting for anything: it stops the hotels whose
// leases were lost, clears away those that ended, hands over the hotels
// that belong to another replica now (they stop after their cycle in
// flight, and give their leases back once their wiring closed), and
// returns the hotels k is to take, with what /readyz says of those
// synced elsewhere. elsewhere is nil when the fleet is stopping; retire
// is true when no hotel names the database any more.
//
// What to hand over, take and say is decided by decide, from a view of
// the fleet taken under f.mu; Plan only gathers the view and acts.
func (b balancer) Plan(k *lease.Keeper, replicas []string, holders []state.Owner, lost []*lease.Owned) (take []string, elsewhere map[string]string, retire bool) {
	f := b.f
	f.mu.Lock()
	defer f.mu.Unlock()
	opLog := f.log.With(slog.String("op", "lease"))
	for _, hl := range lost {
		name := hl.Get().Hotel
		opLog.Warn("hotel stopped: its lease was taken over by another replica", slog.Any("hotel", name))
		// Both runs of a hotel restarting under hl (see restart) end.
		if rh, ok := f.handing[name]; ok && rh.lease == hl {
			rh.kill()
		}
		if rh, ok := f.hotels[name]; ok && rh.lease == hl {
			rh.kill()
			f.handOver(name, rh)
		}
	}
	if f.stopping || f.life.Err() != nil {
		return nil, nil, false
	}
	// A leased hotel that ended: killed when its lease's view ended (it
	// may start again once this replica holds the lease anew), or failed
	// to start (this replica leaves it to the others for a while; it stays
	// among the hotels the replicas share out, so that they agree).
	for name, rh := range f.hotels {
		if rh.lease == nil || rh.lease.Keeper() != k || rh.alive() {
			continue
		}
		delete(f.hotels, name)
		f.closeLater(name, rh, false)
		if rh.life.Err() == nil {
			f.backoff[name] = f.clock.Now().Add(startBackoff)
		}
	}
	names := f.namesOn(k)
	if len(names) == 0 {
		return nil, nil, f.retire(k)
	}
	v := view{me: f.keeper.Replica(), now: f.clock.Now(), ttl: f.keeper.TTL(), one: f.one}
	owner := f.assign(k, names, replicas)
	v.hotels = make([]hotelView, len(names))
	for i, name := range names {
		_, here := f.hotels[name]
		_, wanted := f.leased[name]
		_, handing := f.handing[name]
		v.hotels[i] = hotelView{name: name, owner: owner[name], here: here, wanted: wanted, handing: handing, backoff: f.backoff[name]}
	}
	v.holders = make([]holderView, len(holders))
	for i, h := range holders {
		_, here := f.hotels[h.Hotel]
		v.holders[i] = holderView{Owner: h, here: here}
	}
	d := decide(v)
	for _, name := range d.clearBroken {
		f.tel.ClearBroken(name)
	}
	for _, ho := range d.handOver {
		opLog.Info("hotel handed over to another replica", slog.Any("hotel", ho.hotel), slog.Any("to", ho.to))
		f.handOver(ho.hotel, f.hotels[ho.hotel])
	}
	if d.standBy != "" && d.standBy != f.standingBy {
		for _, name := range names {
			opLog.Info("standing by: replica "+d.standBy+" syncs hotel "+name+"; this daemon takes over when it stops or dies", slog.String("replica", v.me))
		}
		f.standingBy = d.standBy // until this replica takes the hotel (Start)
	}
	return d.take, d.elsewhere, false
}

// view is what a keeper's balancing of one database decides from: the
// database's hotels as this replica sees them, after the leases lost
// were stopped and the hotels that ended were cleared away.
type view struct {
	me      string        // this replica
	hotels  []hotelView   // the database's leased hotels (namesOn)
	holders []holderView  // who holds the database's leases
	now     time.Time     // to compare with the hotels' backoff
	ttl     time.Duration // the leases' time to live
	// one is set in a fleet of one (a daemon of one hotel): its hotel is
	// the live holder's, else this replica's, never handed to a replica
	// that joins, so that a second daemon stands by until the first stops.
	one bool
}

// hotelView is one of a database's leased hotels, as this replica sees it.
type hotelView struct {
	name    string
	owner   string    // the replica it is assigned to (lease.Assign)
	here    bool      // running here
	wanted  bool      // named by the hotels' directory
	handing bool      // stopping here, its lease not given back yet
	backoff time.Time // could not start here; left to the others until then
}

// holderView is a lease's holder, and whether its hotel runs here.
type holderView struct {
	state.Owner
	here bool
}

// handover is a hotel running here that belongs elsewhere now.
type handover struct{ hotel, to string }

// plan is what balancing a database does: hand over hotels running here,
// take others, say where the rest are synced (for /readyz), and clear the
// start failures of hotels another replica syncs now.
type plan struct {
	handOver    []handover
	take        []string
	elsewhere   map[string]string
	clearBroken []string
	// standBy is, in a fleet of one, the replica this one stands by for.
	standBy string
}

// decide is balancing's decision, from v alone: it reads no clock and
// changes nothing.
func decide(v view) plan {
	var p plan
	holder := make(map[string]state.Owner, len(v.holders))
	for _, h := range v.holders {
		holder[h.Hotel] = h.Owner
		if !h.here && h.Live && h.Replica != v.me {
			// Another replica syncs it: a reason this replica could not
			// start it is no longer what /readyz should say here.
			p.clearBroken = append(p.clearBroken, h.Hotel)
		}
	}
	p.elsewhere = map[string]string{}
	for _, hv := range v.hotels {
		name, owner, h := hv.name, hv.owner, holder[hv.name]
		if v.one {
			owner = v.me
			if h.Live {
				owner = h.Replica
			}
			if owner != v.me {
				p.standBy = owner
			}
		}
		switch {
		case hv.here && (owner != v.me || !hv.wanted):
			// Another replica's now (or the file is gone): stop after the
			// cycle in flight; its lease is renewed until its wiring
			// closed, then given back.
			p.handOver = append(p.handOver, handover{hotel: name, to: owner})
			p.elsewhere[name] = "handed over to replica " + owner
		case hv.here:
		case !hv.wanted:
		case owner != v.me && hv.handing:
			// Stopping here: its lease is this replica's until then,
			// unless another replica took it over already.
			if h.Live {
				p.elsewhere[name] = lease.ElsewhereReason(h, true)
			} else {
				p.elsewhere[name] = "handed over to replica " + owner
			}
		case owner != v.me && !lease.Orphan(h, v.ttl):
			_, ok := holder[name]
			p.elsewhere[name] = lease.ElsewhereReason(h, ok)
		case hv.handing:
			p.elsewhere[name] = "handing over"
		case v.now.Before(hv.backoff):
			p.elsewhere[name] = "could not start on this replica; left to the others until " + hv.backoff.Format(time.TimeOnly)
		case h.Live && h.Replica != v.me:
			// Its holder hands it over at its next tick.
			p.elsewhere[name] = lease.ElsewhereReason(h, true)
		default:
			p.take = append(p.take, name)
		}
	}
	return p
}

// Start starts a hotel a keeper took the lease of, in a goroutine of its
// own that wires it; it reports false when the hotel is no longer to run
// here (a reload removed it, or the fleet is stopping).
func (b balancer) Start(name string, hl *lease.Owned) bool {
	f := b.f
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.leased[name]
	_, here := f.hotels[name]
	_, busy := f.handing[name]
	if !ok || here || busy || f.stopping || f.life.Err() != nil || h.Daemon.State.Value() != hl.Keeper().URL() {
		return false
	}
	if f.one && f.standingBy != "" {
		f.log.Info("this daemon holds the lease of hotel "+name+" now", slog.String("op", "lease"), slog.Any("fence", hl.Get().Fence))
		f.standingBy = ""
	}
	rh := f.newRunning(h, hl)
	f.hotels[name] = rh
	go f.run(rh)
	return true
}

// Settle records what /readyz says of the hotels of k's database synced
// elsewhere. A database that did not answer keeps what was said of its
// hotels.
func (b balancer) Settle(k *lease.Keeper, elsewhere map[string]string) {
	f := b.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.elsewhere[k.URL()] = elsewhere
	inUse := map[string]bool{}
	for _, k := range f.keeper.All() {
		inUse[k.URL()] = true
	}
	all := map[string]string{}
	for url, m := range f.elsewhere {
		if !inUse[url] {
			delete(f.elsewhere, url)
			continue
		}
		maps.Copy(all, m)
	}
	f.tel.SetElsewhere(all)
}
