package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// BenchmarkFleetPageLoad measures what viewers of the status page cost a
// daemon of many hotels: the same daemon as BenchmarkFleet (200 hotels of
// 100 requests, TICKETBRIDGE_FLEET_HOTELS and TICKETBRIDGE_FLEET_TICKETS)
// runs rounds of every hotel's cycle, each after one new guest message per
// hotel, in turn with nobody viewing its page and while 100 clients
// (TICKETBRIDGE_PAGE_CLIENTS) ask for its pages over loopback as fast as
// they are answered: the list of hotels, a hotel's overview, its table and
// a request page, hotels picked in turn. Quiet and viewed rounds
// alternate, so that a drift of the machine's other load weighs on both
// alike. It reports the median wall time of a round and of one hotel's
// cycle (the report's Duration, p99 over hotels) in both, their ratios
// (the target is at most 1.10), and the views answered a second while
// viewed, drawn and refused (429 or 503) apart. The clients run in the
// benchmark's process: their own cost is part of what the cycles share
// the machine with.
//
//	go test -run '^$' -bench BenchmarkFleetPageLoad -benchtime 10x ./cmd/ticketbridge/
func BenchmarkFleetPageLoad(b *testing.B) {
	hotels := testutil.EnvInt(b, "TICKETBRIDGE_FLEET_HOTELS", 200)
	tickets := testutil.EnvInt(b, "TICKETBRIDGE_FLEET_TICKETS", 100)
	clients := testutil.EnvInt(b, "TICKETBRIDGE_PAGE_CLIENTS", 100)
	bf := newBenchFleet(b, hotels, tickets)
	bf.startAll(b)
	base := "http://" + bf.fx.tel.Addr().String()
	const rounds = 3

	ctx, cancel := context.WithCancel(context.Background())
	var drawn, refused atomic.Int64
	var wg gosync.WaitGroup
	gate := newGate()
	for c := range clients {
		// Each client asks from an address of its own (127.0.0.2 and on):
		// the page gives one address a share of the views, and 100 users
		// are 100 addresses.
		src := &net.TCPAddr{IP: net.IPv4(127, 0, byte(c/250), byte(2+c%250))}
		hc := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: src}).DialContext}}
		wg.Go(func() {
			for i := c; gate.pass(ctx); i++ {
				name := bf.names[i%len(bf.names)]
				path := []string{
					"/",
					"/hotels/" + name + "/",
					"/hotels/" + name + "/tickets",
					"/hotels/" + name + "/tickets/" + bf.ids[name][i%len(bf.ids[name])],
				}[i%4]
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
				resp, err := hc.Do(req)
				if err != nil {
					continue // the benchmark's end
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					drawn.Add(1)
				case http.StatusServiceUnavailable, http.StatusTooManyRequests:
					refused.Add(1)
				default:
					b.Errorf("GET %s: %d", path, resp.StatusCode)
				}
			}
		})
	}
	var idleRounds, idleCycles, loadRounds, loadCycles []time.Duration
	var viewed time.Duration
	for b.Loop() {
		for range rounds {
			r, c := bf.cycleRounds(b, 1)
			idleRounds, idleCycles = append(idleRounds, r), append(idleCycles, c)
			gate.set(true)
			start := time.Now()
			r, c = bf.cycleRounds(b, 1)
			gate.set(false)
			viewed += time.Since(start)
			loadRounds, loadCycles = append(loadRounds, r), append(loadCycles, c)
		}
	}
	cancel()
	gate.set(true) // let the clients see the end
	wg.Wait()
	took := viewed.Seconds()
	idleRound, idleCycle := median(idleRounds), median(idleCycles)
	loadRound, loadCycle := median(loadRounds), median(loadCycles)

	b.ReportMetric(float64(idleRound.Milliseconds()), "idle-round-ms")
	b.ReportMetric(float64(loadRound.Milliseconds()), "viewed-round-ms")
	b.ReportMetric(float64(loadRound)/float64(idleRound), "round-ratio")
	b.ReportMetric(float64(idleCycle.Milliseconds()), "idle-cycle-p99-ms")
	b.ReportMetric(float64(loadCycle.Milliseconds()), "viewed-cycle-p99-ms")
	b.ReportMetric(float64(loadCycle)/float64(idleCycle), "cycle-ratio")
	b.ReportMetric(float64(drawn.Load())/took, "views-drawn/s")
	b.ReportMetric(float64(refused.Load())/took, "views-refused/s")
}

// cycleRounds runs n rounds of every hotel's cycle at once, each after
// one new guest message per hotel, and returns the median wall time of a
// round and the median over rounds of the p99 over hotels of a cycle's
// own Duration.
func (bf *benchFleet) cycleRounds(b *testing.B, n int) (round, cycle time.Duration) {
	b.Helper()
	running := bf.fx.running()
	var walls, p99s []time.Duration
	for range n {
		for _, name := range bf.names {
			ids := bf.ids[name]
			if _, err := bf.fx.TS.Server.AddMessage(ids[bf.rnd.IntN(len(ids))], refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "and a second pillow"}); err != nil {
				b.Fatal(err)
			}
		}
		var mu gosync.Mutex
		var took []time.Duration
		start := time.Now()
		var wg gosync.WaitGroup
		for name, rh := range running {
			wg.Go(func() {
				rep, err := rh.Engine().RunCycle(context.Background())
				if err != nil || rep.Mirrored != 1 {
					b.Errorf("hotel %s: cycle: %v, %s", name, err, rep)
				}
				mu.Lock()
				took = append(took, rep.Duration)
				mu.Unlock()
			})
		}
		wg.Wait()
		walls = append(walls, time.Since(start))
		slices.Sort(took)
		p99s = append(p99s, took[min(len(took)-1, len(took)*99/100)])
	}
	return median(walls), median(p99s)
}

// gate holds the benchmark's clients while the page is not to be viewed.
type gate struct {
	mu   gosync.Mutex
	cond *gosync.Cond
	open bool
}

func newGate() *gate {
	g := &gate{}
	g.cond = gosync.NewCond(&g.mu)
	return g
}

func (g *gate) set(open bool) {
	g.mu.Lock()
	g.open = open
	g.mu.Unlock()
	g.cond.Broadcast()
}

// pass waits until the gate is open and says whether ctx is still live.
func (g *gate) pass(ctx context.Context) bool {
	g.mu.Lock()
	for !g.open {
		g.cond.Wait()
	}
	g.mu.Unlock()
	return ctx.Err() == nil
}
