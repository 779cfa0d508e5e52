package sync_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// The deterministic simulator runs the real engine, with its real state
// store (bbolt in a temporary file), against the reference server called
// in process and the memory helpdesk, on a fake clock, with one call in
// flight. Every call of either side may fail in every way the two sides
// fail (errors before and after the work, lost answers, timeouts, 429s
// short and long), list reads may be stale, helpdesk events may become
// visible late, the process may crash at any call (the engine, the
// adapter and the API client are discarded and the state file reopened),
// and guests, console staff and agents act between cycles and at any
// call, on the requests' fields too: the console moves, rewords, dates,
// comments and rates them, agents retitle, requeue and date the tickets
// (simfields_test.go); operators pause, resume and resync requests
// (simcommands_test.go). Each call's fate is a pure function of the seed,
// the call's identity and how many times it was seen (simfault_test.go),
// so a seed replays bit for bit, and its trace's digest says so.
//
//	go test ./sync -run Simulation                       # seeds 1 to 200
//	go test ./sync -run Simulation -seeds 10000 -v       # seeds 1 to 10000 on every core
//	go test ./sync -run Simulation -seed 42 -v           # one seed, its trace's tail on failure
//
// Memory is bounded by the seeds in flight (-parallel, the cores unless
// told), not by how many seeds run: a finished seed leaves nothing
// behind (TestRunSeedsLetsFinishedSeedsGo). TestSimulation's summary
// line (-v) gives the process's peak RSS where /proc is there; to measure
// it from outside, build the test binary and run it from the package's
// directory under GNU time, whose "Maximum resident set size" is the peak:
//
//	go test -c -o sim.test ./sync
//	cd sync && /usr/bin/time -v ../sim.test -test.run 'TestSimulation$' -seeds 5000
var (
	simSeeds = flag.Int("seeds", 200, "TestSimulation runs seeds 1 to `n`, -parallel at a time")
	simSeed  = flag.Uint64("seed", 0, "TestSimulation runs this `seed` alone (0: the range of -seeds)")
)

// simConfig sizes a run.
type simConfig struct {
	tickets   int     // requests made before the first cycle
	cycles    int     // cycles with faults and activity
	crashRate float64 // share of calls at which the process crashes
	actRate   float64 // share of calls at which the hotel's people act
	fields    bool    // the activity changes fields on both sides (simfields_test.go)
	commands  bool    // operators pause, resume and resync requests (simcommands_test.go)
}

var simDefaults = simConfig{tickets: 5, cycles: 24, crashRate: 0.01, actRate: 0.03, fields: true, commands: true}

// simNoFields is the run of the simulator before it changed fields: the
// seeds it found regressions with replay their runs exactly under it.
var simNoFields = simConfig{tickets: 5, cycles: 24, crashRate: 0.01, actRate: 0.03}

// simWithFields is the run with field changes and nothing more: the seeds
// found with it replay under it when the activity gains new kinds, which
// must each come with a setting of their own.
var simWithFields = simConfig{tickets: 5, cycles: 24, crashRate: 0.01, actRate: 0.03, fields: true}

// sim is one run.
type sim struct {
	t   testing.TB
	cfg simConfig
	e   *env
	tr  *simTrace
	act *activity

	on      atomic.Bool // faults, crashes and activity at calls
	dead    atomic.Bool // the engine in flight crashed
	mu      gosync.Mutex
	cancel  context.CancelFunc // ends the cycle in flight
	crashes int
}

// faulty reports whether faults are on.
func (s *sim) faulty() bool { return s.on.Load() }

// enter draws the fate of a call of the engine: whether the process
// crashes at it (before or after its work), after letting the hotel's
// people act when the draw says so. dead reports that the engine in
// flight already crashed.
func (s *sim) enter(identity string) (d simDraw, crash string, dead bool) {
	d = s.tr.draw(identity)
	if s.dead.Load() {
		return d, "", true
	}
	if !s.faulty() {
		return d, "", false
	}
	if d.chance(s.cfg.actRate) {
		s.tr.log("%s: act", d.id)
		s.act.step()
	}
	if d.chance(s.cfg.crashRate) {
		crash = "before"
		if d.chance(0.5) {
			crash = "after"
		}
		s.dead.Store(true)
		s.mu.Lock()
		s.crashes++
		cancel := s.cancel
		s.mu.Unlock()
		cancel()
	}
	return d, crash, false
}

// newSim sets a run up: the reference server in process, the memory
// helpdesk, a state file, faults off.
func newSim(t testing.TB, seed uint64, cfg simConfig) *sim {
	var ids atomic.Int64
	e := newEnv(t, refservertest.WithOptions(refserver.Options{
		ConsoleToken:   "console-test-token",
		NewID:          func() string { return fmt.Sprintf("t%05d", ids.Add(1)) },
		TokenRateLimit: refserver.RateLimit{Requests: -1},
	}))
	e.path = filepath.Join(simDir(t), "state.db")
	e.cfg.Concurrency = 1
	// The requests made before the first cycle are imported whatever
	// status they reach before the first list gets through.
	e.cfg.Backfill = tbsync.Backfill{guestapi.StatusAssigned, guestapi.StatusInProgress, guestapi.StatusDone, guestapi.StatusCompleted, guestapi.StatusConfirmed, guestapi.StatusCancelled}
	e.logs = nil
	s := &sim{t: t, cfg: cfg, e: e, tr: newSimTrace(seed)}
	s.act = newActivity(e, seed)
	s.act.note = s.tr.log
	if cfg.fields {
		s.act.fields = newSimFields(s.act)
	}
	if cfg.commands {
		s.act.commands = newSimCommands(s.act, seed)
	}
	api := &simAPI{s: s, srv: e.ts.Server, lists: map[string]simAnswer{}}
	e.wrapAPI = func(tbsync.API) tbsync.API {
		c, err := guestapi.New(guestapi.Config{
			BaseURL: e.ts.URL, APIKey: e.key,
			HTTPClient: &http.Client{Transport: api},
			Now:        e.clock.Now,
			Backoff:    httpretry.Backoff{Rand: func() float64 { return 0.5 }},
			Sleep: func(ctx context.Context, d time.Duration) error {
				s.tr.log("api wait %s", d)
				return ctx.Err()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	e.wrapHD = func(h adapters.Helpdesk) adapters.Helpdesk { return simHelpdesk{Helpdesk: h, s: s} }
	return s
}

// simDir returns a temporary directory for the state file: in memory
// (/dev/shm) where the system has one, so that bbolt's syncs cost no
// disk writes, else the test's own.
func simDir(t testing.TB) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "ticketbridge-sim-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// open starts an engine on the state file, as a start of the daemon does.
func (s *sim) open() *tbsync.Engine { return s.e.open() }

// run plays the run: cycles with faults and activity, then quiet cycles,
// then the checks. It returns the trace's digest.
func (s *sim) run() string {
	e := s.e
	for range s.cfg.tickets {
		s.act.newTicket()
	}
	s.on.Store(true)
	var eng *tbsync.Engine
	for i := range s.cfg.cycles {
		if eng == nil {
			eng = s.open()
			s.tr.log("start")
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.mu.Lock()
		s.cancel = cancel
		s.mu.Unlock()
		rep, err := eng.RunCycle(ctx)
		cancel()
		s.tr.log("cycle %d: %s created %d adopted %d mirrored %d down %d events %d sent %d errors %d failed %t",
			i+1, rep.Outcome, rep.Created, rep.Adopted, rep.Mirrored, rep.StatusDown, rep.Events, rep.Sent, rep.Errors, err != nil)
		if s.dead.Load() {
			s.tr.log("crash")
			eng = nil
			s.dead.Store(false)
		}
		if s.act.commands != nil {
			s.act.commands.cycleEnded()
		}
		s.tr.log("act")
		s.act.step()
		e.clock.Advance(30 * time.Second)
	}
	s.on.Store(false)
	if eng == nil {
		s.open()
		s.tr.log("start")
	}
	if s.act.commands != nil {
		s.act.commands.cycleEnded()
		s.act.commands.resumeAll()
	}
	settle(e)
	s.act.checkAllDelivered()
	if s.act.fields != nil {
		s.act.fields.check()
	}
	return s.tr.digest()
}

// runSim runs one seed and fails t when its end state breaks a promise,
// with the line that reproduces it.
func runSim(t *testing.T, seed uint64, cfg simConfig) (s *sim, digest string) {
	t.Helper()
	s = newSim(t, seed, cfg)
	defer func() {
		if t.Failed() {
			if *simSeed != 0 {
				t.Logf("the trace:\n%s", s.tr.tail(1<<20))
			}
			t.Logf("reproduce: go test ./sync -run 'Simulation' -seed %d -v", seed)
		}
	}()
	digest = s.run()
	if *simSeed != 0 {
		t.Logf("seed %d: %d calls, %d crashes; trace digest %s", seed, s.tr.calls(), s.crashes, digest)
		if s.act.fields != nil {
			t.Logf("seed %d: %s", seed, s.act.fields)
		}
		if s.act.commands != nil {
			t.Logf("seed %d: %s", seed, s.act.commands)
		}
	}
	return s, digest
}

// TestSimulation runs the simulator over seeds 1 to 200 (-seeds n for
// another number), as many at once as -parallel says (the machine's
// cores unless told), and prints each failing seed as the command that
// replays it.
func TestSimulation(t *testing.T) {
	var seeds []uint64
	if *simSeed != 0 {
		seeds = []uint64{*simSeed}
	} else {
		for i := 1; i <= *simSeeds; i++ {
			seeds = append(seeds, uint64(i))
		}
	}
	began := time.Now()
	var calls, crashes atomic.Int64
	failed := runSeeds(t, seeds, func(t *testing.T, seed uint64) {
		s, _ := runSim(t, seed, simDefaults)
		calls.Add(int64(len(s.tr.seen)))
		s.mu.Lock()
		crashes.Add(int64(s.crashes))
		s.mu.Unlock()
	})
	t.Logf("simulation: %d seeds in %s (%d failed); %d distinct calls, %d crashes; peak RSS %d MiB",
		len(seeds), time.Since(began).Round(100*time.Millisecond), len(failed), calls.Load(), crashes.Load(), peakRSS(t)>>20)
	for _, seed := range failed {
		t.Logf("go test ./sync -run 'Simulation' -seed %d -v", seed)
	}
}

// runSeeds runs each seed as the subtest seed/N of t, simParallel seeds
// at a time, and returns the seeds that failed, in order.
//
// A fixed set of workers draws the seeds and runs each as a subtest that
// is not parallel: the testing package holds a parallel subtest, with
// everything its cleanups reach, until its parent ends, and parks a
// goroutine for each one until then, so that N parallel seeds would keep
// N seeds' worlds. A subtest that is not parallel is let go when Run
// returns.
func runSeeds(t *testing.T, seeds []uint64, run func(t *testing.T, seed uint64)) []uint64 {
	var (
		mu     gosync.Mutex
		failed []uint64
	)
	t.Run("seed", func(t *testing.T) {
		next := make(chan uint64)
		var wg gosync.WaitGroup
		for range min(simParallel(), len(seeds)) {
			wg.Go(func() {
				for seed := range next {
					if !t.Run(fmt.Sprint(seed), func(t *testing.T) { run(t, seed) }) {
						mu.Lock()
						failed = append(failed, seed)
						mu.Unlock()
					}
				}
			})
		}
		for _, seed := range seeds {
			next <- seed
		}
		close(next)
		wg.Wait()
	})
	slices.Sort(failed)
	return failed
}

// TestSimulationReplays runs one seed twice: the traces' digests must be
// equal, call for call, fault for fault.
func TestSimulationReplays(t *testing.T) {
	const seed = 7
	_, a := runSim(t, seed, simDefaults)
	_, b := runSim(t, seed, simDefaults)
	t.Logf("seed %d: trace digest %s", seed, a)
	if a != b {
		t.Fatalf("seed %d gave two traces: digests %s and %s", seed, a, b)
	}
}

// TestRunSeedsLetsFinishedSeedsGo: what a seed leaves reachable from
// its test (its cleanups, which hold its servers, state and trace) is
// garbage once the seed has ended, so a run's memory is bounded by the
// seeds in flight, not by how many seeds it runs.
func TestRunSeedsLetsFinishedSeedsGo(t *testing.T) {
	const n = 40
	var seeds []uint64
	for i := 1; i <= n; i++ {
		seeds = append(seeds, uint64(i))
	}
	var (
		mu      gosync.Mutex
		started int
		ended   []weak.Pointer[[1 << 16]byte]
		held    = -1 // ended seeds still reachable when the last one began
	)
	runSeeds(t, seeds, func(t *testing.T, seed uint64) {
		world := new([1 << 16]byte) // stands for a seed's world
		t.Cleanup(func() {
			world[0] = 1
			mu.Lock()
			ended = append(ended, weak.Make(world))
			mu.Unlock()
		})
		mu.Lock()
		started++
		last := started == n
		mu.Unlock()
		if !last {
			return
		}
		runtime.GC()
		mu.Lock()
		defer mu.Unlock()
		held = 0
		for _, w := range ended {
			if w.Value() != nil {
				held++
			}
		}
	})
	// Another seed in flight may have ended without its subtest having
	// returned yet.
	if inFlight := simParallel() - 1; held > inFlight {
		t.Errorf("%d seeds that had ended were still reachable when the last of %d began; at most %d may be", held, n, inFlight)
	}
}

// simParallel returns how many seeds run at once: the test binary's
// -parallel (the machine's cores unless told).
func simParallel() int {
	if f := flag.Lookup("test.parallel"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if n, ok := g.Get().(int); ok && n > 0 {
				return n
			}
		}
	}
	return runtime.GOMAXPROCS(0)
}
