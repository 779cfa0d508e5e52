package main

import (
	"log/slog"
	"maps"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// startBackoff is how long a replica leaves a hotel it could not start to
// the others.
const startBackoff = time.Minute

// namesOn returns the leased hotels of k's database: those of the
// directory, and those running here under a lease of it. Hold f.mu.
func (f *fleet) namesOn(k *dbKeeper) []string {
	var names []string
	for name, h := range f.leased {
		if h.Daemon.State == k.url {
			names = append(names, name)
		}
	}
	for name, rh := range f.hotels {
		if rh.lease != nil && rh.lease.keeper == k {
			if _, ok := f.leased[name]; !ok {
				names = append(names, name)
			}
		}
	}
	return names
}

// dbFailed reports that k's database could not be opened; it reports
// whether the database is no longer in use, and k is to retire.
func (f *fleet) dbFailed(k *dbKeeper, err error) (retire bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := f.namesOn(k)
	if len(names) == 0 {
		return f.retireLocked(k)
	}
	f.log.Error("hotels not started", slog.Any("error", err), slog.Any("hotels", names), slog.String("op", "lease"))
	for _, n := range names {
		if _, ok := f.hotels[n]; !ok {
			f.tel.DropHotel(n, err.Error())
		}
	}
	return false
}

// retireLocked takes k out of the keepers when no hotel names its
// database and it holds no lease. Hold f.mu.
func (f *fleet) retireLocked(k *dbKeeper) bool {
	if k.holds() {
		return false
	}
	lk := f.keeper
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.dbs[k.url] != k {
		return false // leaving
	}
	delete(lk.dbs, k.url)
	lk.retiring.Add(1)
	return true
}

// planDB balances the hotels of k's database after k's heartbeat and
// renewal, without waiting for anything: it stops the hotels whose
// leases were lost, clears away those that ended, hands over the hotels
// that belong to another replica now (they stop after their cycle in
// flight, and give their leases back once their wiring closed), and
// returns the hotels k is to take, with what /readyz says of those
// synced elsewhere. elsewhere is nil when the fleet is stopping; retire
// is true when no hotel names the database any more.
func (f *fleet) planDB(k *dbKeeper, replicas []string, holders []state.Holder, lost []*hotelLease) (take []string, elsewhere map[string]string, retire bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	opLog := f.log.With(slog.String("op", "lease"))
	for _, hl := range lost {
		name := hl.get().Hotel
		opLog.Warn("hotel stopped: its lease was taken over by another replica", slog.Any("hotel", name))
		if rh, ok := f.hotels[name]; ok && rh.lease == hl {
			rh.kill()
			delete(f.hotels, name)
			f.tel.DropHotel(name, "")
			f.closeLater(name, rh)
		} else if rh, ok := f.handing[name]; ok && rh.lease == hl {
			rh.kill()
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
		if rh.lease == nil || rh.lease.keeper != k || rh.alive() {
			continue
		}
		delete(f.hotels, name)
		f.closeLater(name, rh)
		if rh.life.Err() == nil {
			f.backoff[name] = k.lk.clock.Now().Add(startBackoff)
		}
	}
	names := f.namesOn(k)
	if len(names) == 0 {
		return nil, nil, f.retireLocked(k)
	}
	me := k.lk.replica
	owner := assign(names, replicas)
	holder := map[string]state.Holder{}
	for _, h := range holders {
		holder[h.Hotel] = h
		if _, here := f.hotels[h.Hotel]; !here && h.Live && h.Replica != me {
			// Another replica syncs it: a reason this replica could not
			// start it is no longer what /readyz should say here.
			f.tel.ClearBroken(h.Hotel)
		}
	}
	elsewhere = map[string]string{}
	for _, name := range names {
		rh, here := f.hotels[name]
		_, wanted := f.leased[name]
		switch {
		case here && (owner[name] != me || !wanted):
			// Another replica's now (or the file is gone): stop after the
			// cycle in flight; its lease is renewed until its wiring
			// closed, then given back.
			opLog.Info("hotel handed over to another replica", slog.Any("hotel", name), slog.Any("to", owner[name]))
			f.handOver(name, rh)
			elsewhere[name] = "handed over to replica " + owner[name]
		case here:
		case !wanted:
		case owner[name] != me && !orphan(holder[name], k.lk.ttl):
			h, ok := holder[name]
			elsewhere[name] = elsewhereReason(h, ok)
		default:
			if _, busy := f.handing[name]; busy {
				elsewhere[name] = "handing over"
				continue
			}
			if until, ok := f.backoff[name]; ok && k.lk.clock.Now().Before(until) {
				elsewhere[name] = "could not start on this replica; left to the others until " + until.Format(time.TimeOnly)
				continue
			}
			if h, ok := holder[name]; ok && h.Live && h.Replica != me {
				elsewhere[name] = elsewhereReason(h, ok)
				continue // its holder hands it over at its next tick
			}
			take = append(take, name)
		}
	}
	return take, elsewhere, false
}

// startLeased starts a hotel k took the lease of, in a goroutine of its
// own that wires it; it reports false when the hotel is no longer to run
// here (a reload removed it, or the fleet is stopping).
func (f *fleet) startLeased(name string, hl *hotelLease) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.leased[name]
	_, here := f.hotels[name]
	_, busy := f.handing[name]
	if !ok || here || busy || f.stopping || f.life.Err() != nil || h.Daemon.State != hl.keeper.url {
		return false
	}
	rh := f.newRunning(h, hl)
	f.hotels[name] = rh
	go f.run(rh)
	return true
}

// settle records what /readyz says of the hotels of k's database synced
// elsewhere. A database that did not answer keeps what was said of its
// hotels.
func (f *fleet) settle(k *dbKeeper, elsewhere map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.elsewhere[k.url] = elsewhere
	inUse := map[string]bool{}
	for _, k := range f.keeper.all() {
		inUse[k.url] = true
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

// handOver stops a leased hotel after its cycle in flight; its keeper
// renews its lease until then, and it gives the lease back after. Hold
// f.mu.
func (f *fleet) handOver(name string, rh *runningHotel) {
	rh.stop()
	delete(f.hotels, name)
	f.tel.DropHotel(name, "")
	f.closeLater(name, rh)
}

// closeLater closes a stopped hotel's wiring once its goroutine ended,
// then gives its lease back, so that the next holder finds the
// helpdesk's listener and folder let go; until then the hotel is
// stopping (handing), and not started again here. rh.closed is closed
// after. stopAll waits for it. Hold f.mu.
func (f *fleet) closeLater(name string, rh *runningHotel) {
	f.handing[name] = rh
	f.closing.Go(func() {
		<-rh.done
		if rh.page != nil {
			// Off the status page before its state closes.
			f.tel.HidePage(name, rh.page.Hotel)
		}
		if rh.lease != nil {
			rh.lease.stopTimer()
		}
		if rh.w != nil {
			if err := rh.w.Close(); err != nil {
				f.log.Warn("close hotel", slog.Any("error", err), slog.Any("hotel", name), slog.String("op", "stop"))
			}
		}
		if rh.lease != nil {
			rh.lease.keeper.release(rh.lease)
		}
		f.mu.Lock()
		if f.handing[name] == rh {
			delete(f.handing, name)
		}
		f.mu.Unlock()
		close(rh.closed)
	})
}
