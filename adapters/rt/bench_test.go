package rt_test

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// waitMeter measures the time during which at least one request to RT is
// outstanding (from sending it to the end of its answer's body), so that
// with several workers the share of the wall time spent waiting on RT
// stays a share.
type waitMeter struct {
	next http.RoundTripper

	mu       sync.Mutex
	inFlight int
	since    time.Time
	busy     time.Duration
	total    time.Duration // the sum of every request's own duration
	requests atomic.Int64
}

func (m *waitMeter) begin() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if m.inFlight == 0 {
		m.since = now
	}
	m.inFlight++
	return now
}

func (m *waitMeter) end(start time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	m.total += now.Sub(start)
	m.inFlight--
	if m.inFlight == 0 {
		m.busy += now.Sub(m.since)
	}
}

func (m *waitMeter) RoundTrip(r *http.Request) (*http.Response, error) {
	m.requests.Add(1)
	start := m.begin()
	resp, err := m.next.RoundTrip(r)
	if err != nil {
		m.end(start)
		return nil, err
	}
	resp.Body = &meteredBody{ReadCloser: resp.Body, done: func() { m.end(start) }}
	return resp, nil
}

type meteredBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *meteredBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// BenchmarkMirror200x10 mirrors 200 requests with 10 messages each (six
// from the guest, two public staff replies, two internal notes) into the
// real RT, four at a time as the engine does by default, and reports the
// time it takes, the share of it spent waiting on RT, and the requests.
// TICKETBRIDGE_RT_BENCH_TICKETS mirrors another number of requests: CI,
// which runs it once beside the other benchmarks, mirrors 50, so that an
// RT slowed by them does not take ten minutes of its half hour.
func BenchmarkMirror200x10(b *testing.B) {
	r := needRT(b)
	const perTicket, workers = 10, 4
	tickets := testutil.EnvInt(b, "TICKETBRIDGE_RT_BENCH_TICKETS", 200)
	for b.Loop() {
		b.StopTimer()
		queue := r.queue(b, "bench")
		meter := &waitMeter{next: http.DefaultTransport}
		a, err := rt.NewWithOptions(b.Context(), r.config(b, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": ""}),
			adapters.Deps{}, rt.Options{HTTP: &http.Client{Transport: meter, Timeout: time.Minute}})
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Check(b.Context()); err != nil {
			b.Fatal(err)
		}
		work := make(chan int)
		var wg sync.WaitGroup
		var failed atomic.Value
		base := time.Now().Add(-2 * time.Hour)
		b.StartTimer()
		start := time.Now()
		for range workers {
			wg.Go(func() {
				for i := range work {
					if err := mirrorOne(b, a, i, perTicket, base); err != nil {
						failed.Store(err)
					}
				}
			})
		}
		for i := range tickets {
			work <- i
		}
		close(work)
		wg.Wait()
		wall := time.Since(start)
		b.StopTimer()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		n := meter.requests.Load()
		b.ReportMetric(wall.Seconds(), "s/mirror")
		b.ReportMetric(100*meter.busy.Seconds()/wall.Seconds(), "%waiting-on-RT")
		b.ReportMetric(float64(n), "requests/mirror")
		b.ReportMetric(float64(meter.total.Milliseconds())/float64(n), "ms/request")
		b.Logf("%d tickets × %d messages, %d workers: %s; waiting on RT %s (%.1f%%); %d requests, %.1f ms each on average",
			tickets, perTicket, workers, wall.Round(time.Millisecond), meter.busy.Round(time.Millisecond),
			100*meter.busy.Seconds()/wall.Seconds(), n, float64(meter.total.Milliseconds())/float64(n))
		b.StartTimer()
	}
}

func mirrorOne(b *testing.B, a *rt.Adapter, i, perTicket int, base time.Time) error {
	tk := adapters.Ticket{
		UpstreamID: uuid.NewString(), Department: "housekeeping", Status: guestapi.StatusNew,
		TaskDescription: fmt.Sprintf("Request %d: extra towels for room %d", i, 100+i), Origin: guestapi.OriginGuest,
		CreatedAt: base, UpdatedAt: base,
	}
	ref, err := a.EnsureTicket(b.Context(), tk)
	if err != nil {
		return err
	}
	msgs := make([]adapters.Message, perTicket)
	for j := range msgs {
		m := adapters.Message{UpstreamID: uuid.NewString(), AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Guest",
			Body: fmt.Sprintf("Message %d of request %d: could the towels be blue, please? Thank you!", j, i), Public: true,
			CreatedAt: base.Add(time.Duration(j) * time.Minute)}
		switch j % 5 {
		case 2:
			m.AuthorType, m.AuthorName = guestapi.AuthorStaff, "Front desk"
		case 4:
			m.AuthorType, m.AuthorName, m.Public = guestapi.AuthorStaff, "Night manager", false
		}
		msgs[j] = m
	}
	app, err := a.Append(b.Context(), ref, msgs)
	if err != nil {
		return err
	}
	if len(app) != perTicket {
		return fmt.Errorf("append returned %d results", len(app))
	}
	return nil
}
