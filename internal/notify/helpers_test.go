package notify_test

import (
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// notifyRetrier backs off with no jitter, so that the waits are the
// ceilings.
func notifyRetrier() httpretry.Retrier {
	return httpretry.Retrier{Backoff: httpretry.Backoff{Rand: func() float64 { return 0.5 }}}
}
