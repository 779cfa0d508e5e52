package webhook_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
)

func BenchmarkSign1KiB(b *testing.B) {
	body := []byte(strings.Repeat("x", 1024))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		webhook.Sign(testSecret, 1_800_000_000, body)
	}
}

func BenchmarkVerify1KiB(b *testing.B) {
	body := []byte(strings.Repeat("x", 1024))
	sig := webhook.Sign(testSecret, 1_800_000_000, body)
	now := time.Unix(1_800_000_000, 0)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := webhook.Verify(testSecret, "1800000000", sig, body, now, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeliverMessage is one message.added: a signed POST over
// loopback to the in-process receiver, and the synced record update.
func BenchmarkDeliverMessage(b *testing.B) {
	r := newRig(b, false)
	ctx := b.Context()
	ref, err := r.a.EnsureTicket(ctx, upTicket("t-1"))
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		if _, err := r.a.Append(ctx, ref, []adapters.Message{guestMsg(fmt.Sprint("m-", i), "Two towels, please.")}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInboundEvent is one inbound reply: verified, checked and
// synced to disk before the answer.
func BenchmarkInboundEvent(b *testing.B) {
	r := newRig(b, false)
	if _, err := r.a.EnsureTicket(b.Context(), upTicket("t-1")); err != nil {
		b.Fatal(err)
	}
	url := r.a.InboundURL()
	i := 0
	for b.Loop() {
		i++
		body := mustJSON(b, webhook.InboundEvent{ID: fmt.Sprint("rx-", i), Type: webhook.InboundReply, TicketID: "t-1", Body: "On its way."})
		if status, ans := post(b, url, testSecret, time.Now(), body); status != 200 {
			b.Fatalf("%d %+v", status, ans)
		}
	}
}

// BenchmarkChanges1000 reads a page of 100 events out of 1000 stored.
func BenchmarkChanges1000(b *testing.B) {
	r := newRig(b, false)
	ctx := b.Context()
	if _, err := r.a.EnsureTicket(ctx, upTicket("t-1")); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		body := mustJSON(b, webhook.InboundEvent{ID: fmt.Sprint("rx-", i), Type: webhook.InboundNote, TicketID: "t-1", Body: "n"})
		if status, _ := post(b, r.a.InboundURL(), testSecret, time.Now(), body); status != 200 {
			b.Fatal(status)
		}
	}
	_, cur, err := r.a.Changes(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		evs, _, err := r.a.Changes(ctx, cur)
		if err != nil || len(evs) != 100 {
			b.Fatal(len(evs), err)
		}
	}
}
