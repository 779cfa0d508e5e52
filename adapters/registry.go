package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sethvargo/go-envconfig"
)

// ErrUnknownAdapter is returned by [Registry.Open] for a name the registry
// does not hold.
var ErrUnknownAdapter = errors.New("unknown adapter")

// Names returns the registered adapter names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for name := range r {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Open builds the adapter registered under name with deps. An unknown name
// gives an error wrapping [ErrUnknownAdapter] that lists the known names. A
// nil deps.Logger is replaced by one that discards everything, and a nil
// deps.Env by one that finds no variable (so every setting takes its
// default); cmd passes the process environment explicitly.
//
// The adapter must answer to the name it was registered under: a factory
// whose adapter reports another Name is a programming error, and Open closes
// that adapter and returns an error rather than let the engine derive
// Idempotency-Keys from the wrong name.
func (r Registry) Open(ctx context.Context, name string, deps Deps) (Helpdesk, error) {
	f, ok := r[name]
	if !ok || f == nil {
		known := strings.Join(r.Names(), ", ")
		if known == "" {
			known = "none registered"
		}
		return nil, fmt.Errorf("open adapter %q: %w (known: %s)", name, ErrUnknownAdapter, known)
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Env == nil {
		deps.Env = envconfig.MapLookuper(nil)
	}
	h, err := f(ctx, deps)
	if err != nil {
		return nil, fmt.Errorf("open adapter %q: %w", name, err)
	}
	if h == nil {
		return nil, fmt.Errorf("open adapter %q: factory returned no adapter", name)
	}
	if got := h.Name(); got != name {
		_ = h.Close()
		return nil, fmt.Errorf("open adapter %q: the adapter calls itself %q; register it under that name", name, got)
	}
	return h, nil
}
