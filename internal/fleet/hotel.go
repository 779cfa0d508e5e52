package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/internal/version"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// startBackoff is how long a hotel that could not start, or panicked,
// waits before it starts again: a leased one is left to the other
// replicas meanwhile.
const startBackoff = time.Minute

// workerIdle is how long a goroutine of the fleet's workers waits for
// work before it ends. The pool hands work to the goroutine that waited
// least, so a busy fleet keeps those its steady load needs, and the
// spares of a burst (every hotel's first cycle at once, 2,000 goroutines
// of 30 KB of stack) end half a minute after it.
const workerIdle = 30 * time.Second

// runningHotel is one hotel the daemon runs, on a goroutine of its own
// (run) that wires it, runs its scheduler, and restarts it after a panic.
type runningHotel struct {
	conf config.Hotel
	// pageName names the hotel on its status page: "" in a fleet of one,
	// whose page is the daemon's at /.
	pageName string
	tel      *telemetry.Telemetry
	// stop ends the scheduling; the cycle in flight finishes first.
	stop context.CancelFunc
	// kill ends the cycle in flight too, by ending life: the hotel's lease
	// ended.
	kill context.CancelFunc
	life context.Context
	// sctx is the scheduler's context, ended by stop.
	sctx context.Context
	log  *slog.Logger
	opts bridge.Options
	// wired is closed once the goroutine wired the hotel the first time,
	// or failed to; done once the goroutine ended.
	wired     chan struct{}
	wiredOnce gosync.Once
	done      chan struct{}
	// closed is closed once the wiring closed too, and the lease was
	// given back (see closeLater): its helpdesk's listeners and files are
	// let go.
	closed chan struct{}
	// lease is the hotel's lease; nil for a hotel whose state is a file.
	lease *lease.Owned
	// prev, when set, is closed once the hotel's previous run (before a
	// restart) closed: this run wires the hotel after it, and closes
	// after it too.
	prev <-chan struct{}
	// page is the hotel's source of the status page (nil: none); its
	// goroutine sets it, read it after done.
	page *bridge.Console
	// notices watches the conditions of the run's wiring (nil: none);
	// its goroutine sets and ends it (see endNotices).
	notices *hotelNotices

	// next is the hotel's next run when this one restarts under its
	// lease (see restart): it takes this run's state, open.
	next *runningHotel

	// mu guards w, the hotel's wiring: nil before the goroutine wired it,
	// when its wiring failed, and while it waits to restart after a
	// panic; and handed, the state the hotel's previous run left open
	// for this one, until it wires the hotel with it.
	mu     gosync.Mutex
	w      *bridge.Bridge
	handed *state.Store
}

// hand gives the run st, the state its previous run left open.
func (rh *runningHotel) hand(st *state.Store) {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	rh.handed = st
}

// takeHanded returns the state handed to the run, once; nil when none.
func (rh *runningHotel) takeHanded() *state.Store {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	st := rh.handed
	rh.handed = nil
	return st
}

// bridge returns the hotel's wiring (see w).
func (rh *runningHotel) bridge() *bridge.Bridge {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	return rh.w
}

func (rh *runningHotel) setBridge(w *bridge.Bridge) {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	rh.w = w
}

// run is the hotel's goroutine. It waits for rh.prev (the hotel's previous
// run letting its state and helpdesk go), then wires and runs the hotel
// until it is stopped. A panic in the hotel's cycle, adapter or state is
// recovered here: it is logged with its stack and counted, the hotel is
// listed as failing, and, its state being a file, it starts again after
// startBackoff; a leased hotel ends, and its keeper leaves it to the
// other replicas for as long. The other hotels go on. In a fleet of one
// the panic ends the daemon instead (see Fleet.Failed).
func (f *Fleet) run(rh *runningHotel) {
	defer close(rh.done)
	defer rh.wiredOnce.Do(func() { close(rh.wired) })
	if rh.prev != nil {
		select {
		case <-rh.prev:
		case <-rh.sctx.Done():
			return
		}
	}
	for {
		// Wired and started in a call of its own, which returns before
		// the scheduler runs: its frames (and what the start grew the stack
		// to) are not under the scheduler's wait, which lasts as long as
		// the hotel, and the collector can shrink its stack.
		s, panicked := f.start(rh)
		if s != nil {
			panicked = f.serve(rh, s)
		}
		f.endNotices(rh)
		if !panicked {
			return
		}
		if !f.again(rh) {
			return
		}
	}
}

// again makes ready to start a hotel of a state file again after its
// panic, once startBackoff passed; it reports false for a leased hotel
// (its keeper leaves it to the others for a while) or when the hotel was
// stopped meanwhile. (Out of run, whose frame lasts as long as the hotel.)
func (f *Fleet) again(rh *runningHotel) bool {
	if rh.lease != nil || f.one {
		return false
	}
	f.closeWiring(rh)
	if !f.wait(rh.sctx, startBackoff) {
		return false
	}
	rh.log.Info("hotel starting again after its panic", slog.String("op", "start"))
	rh.tel = f.tel.Hotel(rh.conf.Name())
	return true
}

// wait waits d on the fleet's clock; it reports false when ctx ended
// first.
func (f *Fleet) wait(ctx context.Context, d time.Duration) bool {
	passed := make(chan struct{})
	t := f.clock.AfterFunc(d, func() { close(passed) })
	defer t.Stop()
	select {
	case <-passed:
		return true
	case <-ctx.Done():
		return false
	}
}

// start wires the hotel when it is not yet and starts it, returning its
// scheduler; nil when it cannot start (it is listed as failing) or
// panicked, which it reports.
func (f *Fleet) start(rh *runningHotel) (_ *sync.Scheduler, panicked bool) {
	h, name, log, sctx, life := rh.conf, rh.conf.Name(), rh.log, rh.sctx, rh.life
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			f.panicked(rh, v)
		}
	}()
	w := rh.bridge()
	if w == nil {
		var err error
		opts := rh.opts
		opts.Store = rh.takeHanded() // the wiring owns it, closed on error
		w, err = f.wire(life, h.Env, h.Daemon, h.Sync, log, opts)
		if err != nil {
			// A folder the service may not write gets check's fix.
			rh.wiredOnce.Do(func() { close(rh.wired) })
			f.notStarted(rh, "hotel not started", config.WithFix(err, h.Daemon, h.Env, config.CurrentAccount()), slog.Duration("backoff", startBackoff))
			return nil, false
		}
		rh.setBridge(w)
	}
	rh.wiredOnce.Do(func() { close(rh.wired) })
	// The adapter's start and the helpdesk check run here, so that a
	// slow helpdesk delays its own hotel only.
	// A hotel that cannot start is listed as failing by /readyz, and
	// no longer counts for the watchdog: the others go on, and the
	// next reload tries it again.
	if err := w.Start(sctx); err != nil {
		f.notStarted(rh, "hotel stopped", config.WithFix(err, h.Daemon, h.Env, config.CurrentAccount()))
		return nil, false
	}
	tel := rh.tel
	// The hotels' ticks each at a phase of its own (see the package doc);
	// the one hotel of a fleet of one on its schedule as written.
	sched := w.Engine().Schedule()
	if !f.one {
		sched = sync.Spread(sched, name)
	}
	if err := tel.Start(sctx, nil, sched, w.Engine().Interval(), func() (state.Stats, error) { return w.Store().StatsOnCommit(sctx) }); err != nil {
		f.notStarted(rh, "hotel stopped", err)
		return nil, false
	}
	// The hotel's page on the status page, fed after each of its
	// cycles as the page of a daemon of one hotel is.
	var page *bridge.Console
	if f.tel.Listens() { // the status page lists the hotels
		page = bridge.NewConsole(w, rh.pageName)
		if f.notices != nil {
			page.Hotel.WithConditions(func() []notify.Episode { return f.notices.n.Open(name) })
		}
		f.tel.ShowPage(name, page.Hotel)
		rh.page = page
	}
	if f.one && f.started.CompareAndSwap(false, true) { // a restart says "hotel started"
		v, _, _ := version.Get()
		log.Info("ticketbridge started", slog.String("op", "start"), slog.Any("version", v), slog.Any("adapter", h.Daemon.Adapter), slog.Any("state", h.Daemon.State.String()), slog.Any("schedule", h.Sync.Schedule), slog.Any("api", h.Daemon.APIURL))
	} else {
		log.Info("hotel started", slog.String("op", "start"), slog.Any("adapter", h.Daemon.Adapter), slog.String("state", h.Daemon.State.String()), slog.Any("schedule", h.Sync.Schedule), slog.Any("api", h.Daemon.APIURL), slog.Any("file", h.File.Path))
	}
	s := w.Scheduler(f.reporter(rh, w), tel.CycleMax(), page, life)
	s.Schedule = sched
	return s, false
}

// serve runs the hotel's scheduler until it is stopped; it reports
// whether it panicked.
func (f *Fleet) serve(rh *runningHotel, s *sync.Scheduler) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			f.panicked(rh, v)
		}
	}()
	_ = s.Run(rh.sctx)
	return false
}

// notStarted lists a hotel that could not start as failing, with err,
// and logs it as msg. A fleet of one ends with err instead, which the
// daemon prints as it exits, unless the hotel was being stopped (then err
// is the stop's).
func (f *Fleet) notStarted(rh *runningHotel, msg string, err error, attrs ...any) {
	f.tel.DropHotel(rh.conf.Name(), err.Error())
	if f.one {
		if rh.sctx.Err() == nil {
			f.fail(err)
		}
		return
	}
	rh.log.Error(msg, append([]any{slog.Any("error", err), slog.String("op", "start")}, attrs...)...)
}

// panicked logs and counts a panic of the hotel's start or cycle, and
// lists the hotel as failing. A fleet of one logs it and ends, with no
// series of its own: its service manager restarts it (see
// ARCHITECTURE.md, "A daemon of one hotel").
func (f *Fleet) panicked(rh *runningHotel, v any) {
	name := rh.conf.Name()
	stack := debug.Stack()
	if p, ok := v.(*sync.CyclePanic); ok {
		v, stack = p.Value, p.Stack
	}
	if f.one {
		rh.log.Error("the hotel panicked in its cycle, adapter or state; the daemon stops, for its service manager to restart it", slog.Any("panic", fmt.Sprint(v)), slog.String("stack", string(stack)), slog.String("op", "panic"))
		f.tel.DropHotel(name, fmt.Sprintf("panicked: %v", v))
		f.fail(fmt.Errorf("the hotel panicked: %v", v))
		return
	}
	reason := fmt.Sprintf("panicked: %v; starts again in %s", v, startBackoff)
	if rh.lease != nil {
		reason = fmt.Sprintf("panicked: %v; left to the other replicas for %s", v, startBackoff)
	}
	rh.log.Error("hotel failed: a panic in its cycle, adapter or state; the other hotels go on", slog.Any("panic", fmt.Sprint(v)), slog.String("stack", string(stack)), slog.Duration("backoff", startBackoff), slog.String("op", "panic"))
	f.tel.HotelPanicked(name)
	f.tel.DropHotel(name, reason)
}

// closeWiring closes the wiring of a hotel that panicked, before it
// starts again: off the status page before its state closes. A panic of
// the close itself is logged: the state may be what panicked.
func (f *Fleet) closeWiring(rh *runningHotel) {
	name := rh.conf.Name()
	if rh.page != nil {
		f.tel.HidePage(name, rh.page.Hotel)
		rh.page = nil
	}
	w := rh.bridge()
	rh.setBridge(nil)
	if st := rh.takeHanded(); st != nil { // stopped before it wired
		f.forgetNotices(name, st)
		if err := st.Close(); err != nil {
			rh.log.Warn("close hotel", slog.Any("error", err), slog.String("op", "stop"))
		}
	}
	if w == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			rh.log.Error("close hotel: panicked", slog.Any("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())), slog.String("op", "panic"))
		}
	}()
	f.forgetNotices(name, w.Store())
	if err := w.Close(); err != nil {
		rh.log.Warn("close hotel", slog.Any("error", err), slog.String("op", "stop"))
	}
}

// releaseWiring closes the wiring of a hotel that restarts under its
// lease, but for its state, which it returns open for the hotel's next
// run: the state file's lock is never let go, so no command takes it in
// between (and the restarted hotel, unable to open its state, ends).
// The hotel's page stays on the status page until the next run shows
// its own, on the same state.
func (f *Fleet) releaseWiring(rh *runningHotel) (st *state.Store) {
	rh.page = nil
	w := rh.bridge()
	rh.setBridge(nil)
	st = rh.takeHanded() // a run stopped before it wired passes it on
	if w == nil {
		return st
	}
	defer func() {
		if v := recover(); v != nil {
			rh.log.Error("close hotel: panicked", slog.Any("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())), slog.String("op", "panic"))
			st = nil // what panicked may be the state: the next run opens it anew
		}
	}()
	st, err := w.CloseKeepStore()
	if err != nil {
		rh.log.Warn("close hotel's helpdesk", slog.Any("error", err), slog.String("op", "restart"))
	}
	return st
}

// reporter is what the hotel's cycles report to: its telemetry, and its
// notices when the daemon notifies.
func (f *Fleet) reporter(rh *runningHotel, w *bridge.Bridge) bridge.Reporter {
	if f.notices == nil {
		return rh.tel
	}
	hb := f.notices.hotelHeartbeat(rh.conf)
	f.endNotices(rh) // a start that panicked after its watcher began
	rh.notices = f.notices.watch(f.noticeCtx, rh.conf.Name(), w.Store(), hb, rh.log)
	return noticeReporter{rh.tel, rh.notices}
}

// endNotices ends the watcher of the hotel's run, once it reconciled the
// run's last cycle, before the run's state closes.
func (f *Fleet) endNotices(rh *runningHotel) {
	if rh.notices != nil {
		rh.notices.end()
		rh.notices = nil
	}
}

// forgetNotices takes the hotel's state out of the notices' journal
// before it closes.
func (f *Fleet) forgetNotices(name string, st *state.Store) {
	if f.notices != nil {
		f.notices.j.drop(name, st)
		f.notices.n.Forget(name)
		f.notices.forgetBeat(name)
	}
}

// handOver stops a hotel after its cycle in flight, and takes it off the
// hotels running: it closes in the background (see closeLater), and a
// leased hotel's keeper renews its lease until then. Hold f.mu.
func (f *Fleet) handOver(name string, rh *runningHotel) {
	rh.stop()
	delete(f.hotels, name)
	f.tel.DropHotel(name, "")
	f.closeLater(name, rh, false)
}

// restart stops a hotel after its cycle in flight and starts it again
// with h once it closed, under the lease it holds: a hotel whose secret
// files changed. Its lease is never given back meanwhile, so that no
// other replica takes the hotel in between, and it is never off the
// hotels running (nor off /readyz). Hold f.mu.
func (f *Fleet) restart(name string, rh *runningHotel, h config.Hotel) {
	rh.stop()
	next := f.newRunning(h, rh.lease)
	next.prev = rh.closed
	rh.next = next // before closeLater, which hands it the state
	f.closeLater(name, rh, true)
	f.hotels[name] = next
	go f.run(next)
}

// closeLater closes a stopped hotel's wiring once its goroutine ended
// (and its previous run closed), then gives its lease back unless the
// hotel restarts under it (keep: then its state stays open, handed to
// rh.next, see releaseWiring), so that the next holder (or the
// hotel's next run here) finds the state, the helpdesk's listener and
// folder let go; until then the hotel is stopping (handing), and not
// started again here. rh.closed is closed after. Stop waits for it. Hold
// f.mu.
func (f *Fleet) closeLater(name string, rh *runningHotel, keep bool) {
	f.handing[name] = rh
	f.closing.Go(func() {
		<-rh.done
		if rh.prev != nil {
			<-rh.prev
		}
		if keep {
			rh.next.hand(f.releaseWiring(rh))
		} else {
			f.closeWiring(rh)
		}
		if rh.lease != nil && !keep {
			rh.lease.StopTimer()
			rh.lease.Keeper().Release(rh.lease)
		}
		f.mu.Lock()
		if f.handing[name] == rh {
			delete(f.handing, name)
		}
		f.mu.Unlock()
		close(rh.closed)
	})
}
