// Package saas is the core that the adapters of SaaS helpdesks (zendesk,
// freshdesk, zammad) share. [Helpdesk] implements [adapters.Helpdesk] on a
// small [Vendor] interface, the primitives of one helpdesk's API, and owns
// what every vendor would otherwise write again: checking the input of the
// Helpdesk methods, the open-or-closed state, reading the markers the
// bridge leaves in its own comments (see [adapters.Marker]) into what
// Lookup reports after a state loss, not writing a message twice,
// leaving the adapter's own user out of Changes, and the note naming the
// files an agent attached that the API cannot carry. Beside it: loading an
// env-tagged configuration with its defaults declared once, in the tags;
// the texts of the bridge's comments; the rating and origin tags; the
// start time and the framing of a change cursor; the HTTP client, the API
// user asked for once, user names, and the reading of a 429. Each
// vendor's package keeps what is really its own: its wire format, how it
// finds a ticket by its upstream id, how it pages, its change stream and
// cursor, its rate limits, archives and follow-ups.
//
// It is not an adapter and talks to no helpdesk; it imports adapters and
// nothing of the engine.
//
// # Writing a fourth vendor
//
// A new SaaS helpdesk is a package beside its fake that writes only what
// its API does differently (Zammad's primitives, its change stream
// included, are some 600 lines):
//
//   - config.go: an env-tagged Config that embeds [Common] (defaults in
//     the tags), LoadConfig through [Load], Validate naming the variable at fault, and String,
//     GoString and LogValue that never show the secret.
//   - the Adapter: a struct embedding *Helpdesk[T], built in New with
//     [NewHelpdesk] over a small type that implements [Vendor] (the
//     packages here use `type vendor struct{ *Adapter }`, so that the
//     primitives stay out of the Adapter's exported methods); a Factory
//     that is [Build]; a Check that proves the credentials
//     ([adapters.Checker]).
//   - the primitives of [Vendor]: Self (a [Memo] of the API user), Find
//     and Thread (by what the bridge stores in the ticket: an external id,
//     a custom field), Create (with [DescriptionText]), Resolve (a Ref is
//     [RefOf] the ticket number, read with [ParseRef]), Comments, Comment
//     (with [MessageText]), Note (an internal note), Status (with
//     [Target]) and Events (a cursor framed by [Cursor], and the names of
//     the files attached to replies and notes).
//   - [Fielder], the platform's fields in the ticket's own fields (Held,
//     Want and SetFields), and an Update that calls
//     [Helpdesk.UpdateFields], which compares, writes the rating and
//     comment notes once by their markers and returns the rate budget's
//     [adapters.WaitError] (a [Budget] counts writes per ticket where the
//     helpdesk limits them).
//   - [Connecter], reading a ticket made by hand and stamping the
//     upstream id into it where Create stores it, and a Connect that calls
//     [Helpdesk.ConnectTicket] ([adapters.Connector]).
//   - T, the vendor's view of what mirrors one upstream ticket: the ticket
//     itself, or, where the helpdesk closes tickets for good, the ticket
//     and its follow-ups; a [Preparer] when a ticket must change before
//     messages go in.
//   - a fake in a sub-package that follows the vendor's published API
//     (errors, paging, rate limits) on the plumbing of package saasfake
//     (its clock, faults and request log), a conformance_test.go that runs
//     package adaptertest against it, and an e2e test with internal/looptest.
//
// The vendor writes no marker parsing, no dedup of appends, no input
// checks and no open-or-closed state of its own.
package saas

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/envvar"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/internal/secretfile"
)

// Defaults fills the zero fields of target, a pointer to an env-tagged
// struct, with the defaults its tags declare; fields already set stay.
// It is how a configuration built in code gets the defaults [envvar.Load]
// gives one read from the environment.
func Defaults(target any) {
	// With no variables, only defaults apply, and go-envconfig leaves
	// non-zero fields alone; a tag's default that does not parse is a
	// programming error that the package's tests meet.
	_ = envconfig.ProcessWith(context.Background(), &envconfig.Config{Target: target, Lookuper: envconfig.MapLookuper(nil)})
}

// Since is where a change stream starts when it has no cursor (a SaaS
// adapter's EVENTS_SINCE or SINCE), in Unix seconds, parsed once when read
// (go-envconfig's Decoder): an RFC 3339 time or a date; empty means the
// beginning, 1970-01-01T00:00:00Z. A time before 1970 is refused.
type Since int64

// EnvDecode parses s; its errors are explained by package envvar, which
// names the variable and the value.
func (v *Since) EnvDecode(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		*v = 0
		return nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Unix() < 0 {
				return errors.New("is before 1970")
			}
			*v = Since(t.Unix())
			return nil
		}
	}
	return errors.New("want a date such as 2026-01-31 or a time such as 2026-01-31T12:00:00Z")
}

// SinceOf returns t as a [Since], for a configuration built in code.
func SinceOf(t time.Time) Since { return Since(t.Unix()) }

// Time is v in UTC.
func (v Since) Time() time.Time { return time.Unix(int64(v), 0).UTC() }

// String is v in RFC 3339; "" for the beginning.
func (v Since) String() string {
	if v == 0 {
		return ""
	}
	return v.Time().Format(time.RFC3339)
}

// Life is whether an adapter is open. The zero value is open; it is safe
// for concurrent use.
type Life struct {
	mu     sync.Mutex
	closed bool
}

// Close marks the adapter closed; the SaaS adapters hold no connection of
// their own.
func (l *Life) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}

// ErrClosed is returned by the methods of a closed adapter.
var ErrClosed = errors.New("adapter is closed")

// Check returns an error naming the adapter name when it is closed.
func (l *Life) Check(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("%s %w", name, ErrClosed)
	}
	return nil
}

// Common is what the configuration of every SaaS adapter holds, embedded
// in each adapter's Config, and so do the department groups (GROUPS), whose
// values are each helpdesk's own. Its env tags are read under the adapter's
// prefix (TICKETBRIDGE_ZENDESK_URL, TICKETBRIDGE_ZAMMAD_URL, ...); the
// secret, the default group, the tag and the start of the change stream
// differ in name, type or default from one helpdesk to the next and stay
// in each adapter's Config, and so do the department groups (GROUPS), whose
// values are each helpdesk's own.
type Common struct {
	// URL is the helpdesk's address, without the API's path; each
	// adapter checks it with its [adapters.BaseURL].
	URL adapters.URL `env:"URL"`
	// Timeout bounds each HTTP request to the helpdesk.
	Timeout time.Duration `env:"TIMEOUT,default=30s"`
	// PageSize is the size of the pages of the lists the adapter reads;
	// each helpdesk has its own maximum.
	PageSize int `env:"PAGE_SIZE,default=100"`
	// AllowInsecureHTTP accepts a plain http URL to a host that is not
	// loopback; [Load] sets it from TICKETBRIDGE_ALLOW_INSECURE_HTTP (see
	// adapters.CheckHTTPS).
	AllowInsecureHTTP bool
}

// embedsCommon is a configuration that embeds [Common]; [Load] reaches
// it through the promoted method.
type embedsCommon interface{ common() *Common }

var _ embedsCommon = (*Common)(nil)

func (c *Common) common() *Common { return c }

// CheckTimeout returns an error naming prefix+TIMEOUT when Timeout is
// negative.
func (c Common) CheckTimeout(prefix string) error {
	if c.Timeout < 0 {
		return fmt.Errorf("%sTIMEOUT %s is negative", prefix, c.Timeout)
	}
	return nil
}

// Load reads a configuration C, which embeds [Common], with [envvar.Load],
// replaces its secret by the content of the secret's file when one is
// named (see [secretfile.Resolve]; secretVar is the secret's variable,
// without prefix), sets AllowInsecureHTTP from
// TICKETBRIDGE_ALLOW_INSECURE_HTTP (see [adapters.CheckHTTPS]), and
// validates it.
func Load[C any, PC interface {
	*C
	embedsCommon
	Validate() error
}](ctx context.Context, env envconfig.Lookuper, prefix, what, secretVar string, secret func(PC) (value *redact.Secret, file string)) (C, error) {
	var c C
	if err := envvar.Load(ctx, env, prefix, what+" configuration", &c); err != nil {
		return c, err
	}
	allow, err := adapters.LoadInsecureHTTP(ctx, env)
	if err != nil {
		var zero C
		return zero, fmt.Errorf("read %s configuration: %w", what, err)
	}
	PC(&c).common().AllowInsecureHTTP = allow
	value, file := secret(&c)
	s, err := secretfile.Resolve(prefix+secretVar, value.Reveal(), file)
	if err != nil {
		var zero C
		return zero, err
	}
	*value = redact.Secret(s)
	if err := PC(&c).Validate(); err != nil {
		var zero C
		return zero, err
	}
	return c, nil
}

// Build is the body of a SaaS adapter's Factory: it loads the
// configuration from deps.Env with load and makes the adapter with newA
// and the zero options.
func Build[C, O any, A adapters.Helpdesk](ctx context.Context, deps adapters.Deps, load func(context.Context, envconfig.Lookuper) (C, error), newA func(C, adapters.Deps, O) (A, error)) (adapters.Helpdesk, error) {
	cfg, err := load(ctx, deps.Env)
	if err != nil {
		return nil, err
	}
	var opts O
	a, err := newA(cfg, deps, opts)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return a, nil
}
