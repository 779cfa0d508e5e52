package zendesk_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
)

func TestFactoryThroughTheRegistry(t *testing.T) {
	e := newEnv(t, zendeskfake.Options{})
	reg := adapters.Registry{zendesk.Name: zendesk.Factory}
	hd, err := reg.Open(t.Context(), "zendesk", adapters.Deps{Env: envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_ZENDESK_URL":   e.url,
		"TICKETBRIDGE_ZENDESK_EMAIL": testEmail,
		"TICKETBRIDGE_ZENDESK_TOKEN": testToken,
	})})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer hd.Close()
	if err := hd.(adapters.Checker).Check(t.Context()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if _, err := reg.Open(t.Context(), "zendesk", adapters.Deps{}); err == nil {
		t.Error("Open without configuration succeeded")
	}
}

// BenchmarkChanges reads 1000 agent replies on 10 tickets from the start
// of the export with a fresh adapter, over loopback HTTP.
func BenchmarkChanges(b *testing.B) {
	e := newEnv(b, zendeskfake.Options{ExportRequests: zendeskfake.RateLimit{Requests: -1}})
	a := e.open(b, e.config())
	agent := e.agent("Anna")
	for i := range 10 {
		ref, err := a.EnsureTicket(b.Context(), upstreamTicket(fmt.Sprintf("up-%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		id := mustRef(b, ref)
		for j := range 100 {
			// A second apart, the last two minutes old: the export has them.
			var err error
			e.fake.CommitLate(time.Duration(1120-i*100-j)*time.Second, func() {
				_, err = e.fake.Reply(id, agent, fmt.Sprintf("reply %d", j))
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	e.fake.ResetRequests()
	b.ResetTimer()
	for range b.N {
		fresh := e.open(b, e.config())
		n := 0
		c := adapters.Cursor("")
		for {
			evs, next, err := fresh.Changes(b.Context(), c)
			if err != nil {
				b.Fatal(err)
			}
			n += len(evs)
			if len(evs) == 0 && next == c {
				break
			}
			c = next
		}
		if n != 1000 {
			b.Fatalf("%d events, want 1000", n)
		}
	}
	b.ReportMetric(float64(len(e.fake.Requests()))/float64(b.N), "requests/op")
}

// BenchmarkAppend appends one message to a ticket that holds 20.
func BenchmarkAppend(b *testing.B) {
	e := newEnv(b, zendeskfake.Options{TicketUpdates: zendeskfake.RateLimit{Requests: -1}})
	a := e.open(b, e.config())
	ref, err := a.EnsureTicket(b.Context(), upstreamTicket("up-1"))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		if _, err := a.Append(b.Context(), ref, []adapters.Message{guestMsg(fmt.Sprintf("seed-%d", i), "seed")}); err != nil {
			b.Fatal(err)
		}
	}
	e.fake.ResetRequests()
	b.ResetTimer()
	for i := range b.N {
		if _, err := a.Append(b.Context(), ref, []adapters.Message{guestMsg(fmt.Sprintf("m-%d", i), "hello")}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(e.fake.Requests()))/float64(b.N), "requests/op")
}
