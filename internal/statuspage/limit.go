package statuspage

import (
	"net/http"
	"runtime"
	"strconv"
	gosync "sync"
	"time"
)

// Requests are bounded, because anyone who reaches the page may ask for
// it, and the page must never take the machine from the cycles nor be
// kept from the people who run the bridge:
//
//   - a request that carries a valid credential (a live session, the
//     console token as bearer credential, or in the sign-in form) is never
//     refused: it waits its turn to be drawn, however many wait;
//   - of the others, views (GET and HEAD, but the sign-in form) take
//     from one budget of [Options.ViewRate] a second, and the sign-in
//     form, sign-ins and actions from another of [signInRate] a second, so
//     that a flood of views leaves room to sign in; each budget comes in
//     bursts of up to three seconds' worth, and one client (an address,
//     as the sign-in throttle counts them) may take a [clientShare]th of
//     it, so that one client's flood leaves the others' requests served.
//     A request beyond is answered 429 with Retry-After;
//   - at most [Options.Renders] requests are drawn at once, at most
//     [Options.Waiting] more of those without credential wait for their
//     turn, and any further one is answered 503 with Retry-After.
//
// A refused request is answered after a second (its Retry-After), not at
// once, while fewer than [maxHeld] refusals are held: a client that asks
// again as soon as it is answered then asks once a second, not thousands
// of times, and a held answer costs a parked goroutine only.
//
// The rates, like the sign-in throttle (throttle.go), the sessions'
// expiry (auth.go) and the page itself, are counted on the process's clock
// (time.Now): their tests run in a testing/synctest bubble, whose clock
// moves as they wait.
const (
	// waitingPerRender is the default of Options.Waiting per render.
	waitingPerRender = 16
	// defaultViewRate is the default of Options.ViewRate: far above what
	// people at a browser ask for, low enough that a flood of views costs
	// the cycles little (a view of a hotel of 100 requests takes about
	// 1 ms to draw).
	defaultViewRate = 20
	// signInRate is the budget of the sign-in form, sign-ins and actions
	// without a valid credential, a second: a person signs in with two
	// requests, and the page's actions and the CLI's are credentialed.
	signInRate = 20
	// clientShare: one client may take a clientShare-th of a budget (5
	// views a second of the default 20, in bursts of 15).
	clientShare = 4
	// burstSeconds is how many seconds of the rate a burst may take.
	burstSeconds = 3
	// maxHeld bounds the refusals held before their answer; beyond, a
	// refusal is answered at once.
	maxHeld = 1024
	// holdFor is how long a refusal is held: its Retry-After.
	holdFor = time.Second
)

// kind is how a request is bounded.
type kind int

const (
	// credentialed: a valid session or token; never refused.
	credentialed kind = iota
	// viewing: a GET or HEAD but of the sign-in form.
	viewing
	// signingIn: the sign-in form, a sign-in, an action without a valid
	// credential.
	signingIn
)

// renderLimit bounds the requests: their rates and how many at once.
type renderLimit struct {
	slots chan struct{}

	mu      gosync.Mutex
	waiting int
	max     int // requests that may wait
	held    int // refusals being held
	views   budget
	signIn  budget
}

// newRenderLimit returns the limit of rate views a second (0: 20; below
// 0: none), renders requests at once (0: half the processors, at least
// one) with up to waiting more queued (0: 16 per render).
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
	return &renderLimit{slots: make(chan struct{}, renders), max: waiting,
		views: newBudget(rate), signIn: newBudget(signInRate)}
}

// budget is a rate of requests a second, in bursts of burstSeconds'
// worth, shared by every client, of which one client may take a
// clientShare-th.
type budget struct {
	rate    float64 // a second; 0: no bound
	all     bucket
	clients map[string]*bucket // the clients whose bucket is not full
}

// bucket is what is left of a budget, and when it was last taken from.
type bucket struct {
	tokens float64
	last   time.Time // zero: never, the bucket is full
}

func newBudget(rate float64) budget {
	return budget{rate: rate, clients: map[string]*bucket{}}
}

// fill adds to b what rate a second gave since it was last taken from,
// up to a burst.
func (b *bucket) fill(now time.Time, rate float64) {
	burst := rate * burstSeconds
	if b.last.IsZero() {
		b.tokens = burst
	} else {
		b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	}
	b.last = now
}

// take takes one request of client from g, if both client's share and
// what all clients share have one left.
func (g *budget) take(client string, now time.Time) bool {
	if g.rate == 0 {
		return true
	}
	g.all.fill(now, g.rate)
	if g.all.tokens < 1 {
		return false
	}
	share := g.rate / clientShare
	c := g.clients[client]
	if c == nil {
		g.makeRoom(now, share)
		c = &bucket{}
		g.clients[client] = c
	}
	c.fill(now, share)
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	g.all.tokens--
	return true
}

// makeRoom keeps the table of clients under maxClients: the clients
// whose bucket has filled again go (a new bucket is as full), or else
// the one that took last longest ago.
func (g *budget) makeRoom(now time.Time, share float64) {
	if len(g.clients) < maxClients {
		return
	}
	oldest, at := "", time.Time{}
	for c, b := range g.clients {
		if b.tokens+now.Sub(b.last).Seconds()*share >= share*burstSeconds {
			delete(g.clients, c)
			continue
		}
		if oldest == "" || b.last.Before(at) {
			oldest, at = c, b.last
		}
	}
	if len(g.clients) >= maxClients {
		delete(g.clients, oldest)
	}
}

// take takes one request of client of kind k from its budget.
func (l *renderLimit) take(k kind, client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch k {
	case viewing:
		return l.views.take(client, time.Now())
	case signingIn:
		return l.signIn.take(client, time.Now())
	}
	return true
}

// serve runs h for r, a request of kind k from client, when its budget
// allows and a slot is free, after waiting for one if few enough requests
// wait (a credentialed one waits however many do); else it answers 429
// or 503. When r's context ends while it waits, it answers nothing.
func (l *renderLimit) serve(w http.ResponseWriter, r *http.Request, h http.Handler, k kind, client string) {
	if !l.take(k, client) {
		what := "views"
		if k == signingIn {
			what = "sign-ins and actions"
		}
		l.refuse(w, r, http.StatusTooManyRequests, "the status page is busy: too many "+what+" a second; try again in a moment")
		return
	}
	if !l.slot(w, r, k) {
		return
	}
	defer func() { <-l.slots }()
	h.ServeHTTP(w, r)
}

// slot takes a slot for r, of kind k, waiting for one if few enough
// requests wait; a credentialed request waits however many do. It is
// false when r was refused, or its client left while it waited (then
// nothing is answered).
func (l *renderLimit) slot(w http.ResponseWriter, r *http.Request, k kind) bool {
	select {
	case l.slots <- struct{}{}:
		return true
	default:
	}
	if k != credentialed {
		if !l.queue() {
			l.refuse(w, r, http.StatusServiceUnavailable, "the status page is busy: too many views at once; try again in a moment")
			return false
		}
		defer l.dequeue()
	}
	select {
	case l.slots <- struct{}{}:
		return true
	case <-r.Context().Done():
		return false
	}
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
