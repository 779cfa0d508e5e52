package fleet

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/gopool"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestHotelsShareTheWorkers: every hotel of a fleet runs its cycles on the
// fleet's one pool of workers, whose goroutines keep the stacks a cycle
// grew (package internal/gopool), as they share its request slots and
// import slots.
func TestHotelsShareTheWorkers(t *testing.T) {
	fx := newFleetFixture(t)
	for _, n := range []string{"alpha", "beta"} {
		fx.WriteHotel(n, nil)
	}
	f := fx.newReplica(t.Context())
	type wired struct {
		hotel   string
		workers *gopool.Pool
		imports *sync.Imports
	}
	got := make(chan wired, 2)
	realWire := f.wire
	f.wire = func(ctx context.Context, env envconfig.Lookuper, cfg config.Daemon, sc sync.Config, log *slog.Logger, opts bridge.Options) (*bridge.Bridge, error) {
		got <- wired{cfg.Hotel, opts.Workers, opts.Imports}
		return realWire(ctx, env, cfg, sc, log, opts)
	}
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(time.Minute) // a hang's report, not a timing
	var first wired
	for i := range 2 {
		select {
		case w := <-got:
			if w.workers == nil || w.imports == nil {
				t.Fatalf("hotel %s was wired with workers %p and imports %p: want the fleet's", w.hotel, w.workers, w.imports)
			}
			if i == 0 {
				first = w
			} else if w.workers != first.workers || w.imports != first.imports {
				t.Errorf("hotels %s and %s were wired with pools of their own", first.hotel, w.hotel)
			}
		case <-timeout:
			t.Fatal("the hotels were not wired within a minute")
		}
	}
}
