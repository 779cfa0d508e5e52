package statuspage

import (
	"net/http"
	"runtime"
	"strconv"
	gosync "sync"
	"time"
)

// Page views are bounded, because anyone who reaches the page may ask for
// it, and the page must never take the machine from the cycles:
//
//   - at most [Options.ViewRate] views a second are drawn, in bursts of up
//     to three seconds' worth; a view beyond is answered 429 with
//     Retry-After at once, at the cost of its headers only;
//   - at most [Options.Renders] views are drawn at once, at most
//     [Options.Waiting] more wait for their turn, and any further view is
//     answered 503 with Retry-After at once.
//
// A refused view is answered after a second (its Retry-After), not at
// once, while fewer than [maxHeld] refusals are held: a client that asks
// again as soon as it is answered then asks once a second, not thousands
// of times, and a held answer costs a parked goroutine only.
//
// The rate is counted on the process's own clock, not on [Options.Now]:
// a page's clock may stand still in tests, a rate's may not.
const (
	// waitingPerRender is the default of Options.Waiting per render.
	waitingPerRender = 16
	// defaultViewRate is the default of Options.ViewRate: far above what
	// people at a browser ask for, low enough that a flood of views costs
	// the cycles little (a view of a hotel of 100 requests takes about
	// 1 ms to draw).
	defaultViewRate = 20
	// burstSeconds is how many seconds of the rate a burst may take.
	burstSeconds = 3
	// maxHeld bounds the refusals held before their answer; beyond, a
	// refusal is answered at once.
	maxHeld = 1024
	// holdFor is how long a refusal is held: its Retry-After.
	holdFor = time.Second
)

// renderLimit is the bound of views: their rate and how many at once.
type renderLimit struct {
	slots chan struct{}
	rate  float64 // views a second; 0: no bound
	now   func() time.Time

	mu      gosync.Mutex
	waiting int
	max     int // views that may wait
	held    int // refusals being held
	tokens  float64
	last    time.Time
}

// newRenderLimit returns the limit of rate views a second (0: 20; below
// 0: none), renders views at once (0: half the processors, at least one)
// with up to waiting more queued (0: 16 per render).
func newRenderLimit(rate float64, renders, waiting int) *renderLimit {
	if renders <= 0 {
		renders = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if waiting <= 0 {
		waiting = waitingPerRender * renders
	}
	switch {
	case rate == 0:
		rate = defaultViewRate
	case rate < 0:
		rate = 0
	}
	return &renderLimit{slots: make(chan struct{}, renders), max: waiting, rate: rate, now: time.Now, tokens: rate * burstSeconds}
}

// take takes one view from the rate's bucket, or says how long until one
// is there.
func (l *renderLimit) take() (ok bool, wait time.Duration) {
	if l.rate == 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() {
		l.tokens = min(l.rate*burstSeconds, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return true, 0
	}
	return false, time.Duration((1 - l.tokens) / l.rate * float64(time.Second))
}

// serve runs h for r when the rate allows and a slot is free, after
// waiting for one if few enough views wait; else it answers 429 or 503.
// When r's context ends while it waits, it answers nothing.
func (l *renderLimit) serve(w http.ResponseWriter, r *http.Request, h http.Handler) {
	if ok, _ := l.take(); !ok {
		l.refuse(w, r, http.StatusTooManyRequests, "the status page is busy: too many views a second; try again in a moment")
		return
	}
	select {
	case l.slots <- struct{}{}:
	default:
		if !l.queue() {
			l.refuse(w, r, http.StatusServiceUnavailable, "the status page is busy: too many views at once; try again in a moment")
			return
		}
		select {
		case l.slots <- struct{}{}:
			l.dequeue()
		case <-r.Context().Done():
			l.dequeue()
			return // the client left
		}
	}
	defer func() { <-l.slots }()
	h.ServeHTTP(w, r)
}

func (l *renderLimit) queue() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waiting >= l.max {
		return false
	}
	l.waiting++
	return true
}

func (l *renderLimit) dequeue() {
	l.mu.Lock()
	l.waiting--
	l.mu.Unlock()
}

// refuse answers a view the page has no room for with code and text,
// after holding it for its Retry-After while few refusals are held.
func (l *renderLimit) refuse(w http.ResponseWriter, r *http.Request, code int, text string) {
	l.mu.Lock()
	hold := l.held < maxHeld
	if hold {
		l.held++
	}
	l.mu.Unlock()
	if hold {
		t := time.NewTimer(holdFor)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
		l.mu.Lock()
		l.held--
		l.mu.Unlock()
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(holdFor/time.Second)))
	http.Error(w, text, code)
}
