package statuspage

import (
	"net/http"
	"runtime"
	gosync "sync"
)

// Page views are bounded, because anyone who reaches the page may ask for
// it: at most [Options.Renders] views are served at once, at most
// [Options.Waiting] more wait for their turn (in arrival order of the
// runtime's channel), and any further view is answered 503 at once, at
// the cost of its headers only. A daemon's cycles thus keep the rest of
// the machine, whatever the number of viewers.
const (
	// waitingPerRender is the default of Options.Waiting per render.
	waitingPerRender = 16
)

// renderLimit is the bound of concurrent views.
type renderLimit struct {
	slots chan struct{}

	mu      gosync.Mutex
	waiting int
	max     int // views that may wait
}

// newRenderLimit returns the limit of renders views at once (0: half the
// processors, at least one) with up to waiting more queued (0: 16 per
// render).
func newRenderLimit(renders, waiting int) *renderLimit {
	if renders <= 0 {
		renders = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if waiting <= 0 {
		waiting = waitingPerRender * renders
	}
	return &renderLimit{slots: make(chan struct{}, renders), max: waiting}
}

// serve runs h for r when a slot is free, after waiting for one if few
// enough views wait; else, or when r's context ends while it waits, it
// answers 503.
func (l *renderLimit) serve(w http.ResponseWriter, r *http.Request, h http.Handler) {
	select {
	case l.slots <- struct{}{}:
	default:
		if !l.queue() {
			busy(w)
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

// busy answers a view the page has no room for.
func busy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, "the status page is busy: too many views at once; try again in a moment", http.StatusServiceUnavailable)
}
