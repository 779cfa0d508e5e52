package receiver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
)

// TestRefusesOversizedDelivery: a delivery over MaxBodyBytes, correctly
// signed, is refused with 400 and neither recorded nor answered.
func TestRefusesOversizedDelivery(t *testing.T) {
	inBubble(t, func(t *testing.T, now time.Time) {
		rc, d := newReceiver(t, "")
		body := []byte(`{"id":"d-big","type":"message.added","ticket_id":"t-1","pad":"` + strings.Repeat("x", receiver.MaxBodyBytes) + `"}`)
		code, answer := deliver(t, rc, secret, now, "d-big", "message.added", body)
		if code != 400 || !strings.Contains(answer, "too large") {
			t.Fatalf("oversized delivery: %d %.200s", code, answer)
		}
		if st := rc.Stats(); st.Invalid != 1 || len(d.got()) != 0 {
			t.Fatalf("oversized delivery counted %+v, answered %d times", st, len(d.got()))
		}
	})
}
