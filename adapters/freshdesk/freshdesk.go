package freshdesk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// Name is the adapter's registry name.
const Name = "freshdesk"

// DefaultStatusMap maps the API's statuses onto Freshdesk's and back, in
// Freshdesk's numbers (2 open, 3 pending, 4 resolved, 5 closed).
//
// Down: new, assigned and in_progress are open; done is resolved;
// completed, confirmed and cancelled are closed. Up: open and pending are
// in_progress (the team works on it, or waits for the guest), resolved and
// closed are done. A change between two Freshdesk statuses that map to the
// same upstream status (open to pending, resolved to closed) is not carried
// up.
func DefaultStatusMap() adapters.StatusMap {
	open, pending, resolved, closed := strconv.Itoa(statusOpen), strconv.Itoa(statusPending), strconv.Itoa(statusResolved), strconv.Itoa(statusClosed)
	return adapters.StatusMap{
		ToHelpdesk: map[guestapi.Status]string{
			guestapi.StatusNew:        open,
			guestapi.StatusAssigned:   open,
			guestapi.StatusInProgress: open,
			guestapi.StatusDone:       resolved,
			guestapi.StatusCompleted:  closed,
			guestapi.StatusConfirmed:  closed,
			guestapi.StatusCancelled:  closed,
		},
		FromHelpdesk: map[string]guestapi.Status{
			open:     guestapi.StatusInProgress,
			pending:  guestapi.StatusInProgress,
			resolved: guestapi.StatusDone,
			closed:   guestapi.StatusDone,
		},
	}
}

// statusNames are the names of Freshdesk's built-in statuses, accepted in
// status mapping overrides besides the numbers.
var statusNames = map[string]int{"open": statusOpen, "pending": statusPending, "resolved": statusResolved, "closed": statusClosed}

// parseStatus reads a Freshdesk status given as a number (2 and up; custom
// statuses have numbers above 5) or as one of the built-in names.
func parseStatus(s string) (int, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if n, ok := statusNames[s]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < statusOpen {
		return 0, fmt.Errorf("%q is not a Freshdesk status: want open, pending, resolved, closed or a status number (2 and up)", s)
	}
	return n, nil
}

// statusMap is DefaultStatusMap with deps' overrides, their Freshdesk
// statuses written as numbers.
func statusMap(deps adapters.Deps) (adapters.StatusMap, error) {
	norm := adapters.Deps{StatusToHelpdesk: map[guestapi.Status]string{}, StatusFromHelpdesk: map[string]guestapi.Status{}}
	for up, h := range deps.StatusToHelpdesk {
		n, err := parseStatus(h)
		if err != nil {
			return adapters.StatusMap{}, fmt.Errorf("status mapping %s=%s: %w", up, h, err)
		}
		norm.StatusToHelpdesk[up] = strconv.Itoa(n)
	}
	for h, up := range deps.StatusFromHelpdesk {
		n, err := parseStatus(h)
		if err != nil {
			return adapters.StatusMap{}, fmt.Errorf("status mapping %s=%s: %w", h, up, err)
		}
		norm.StatusFromHelpdesk[strconv.Itoa(n)] = up
	}
	return DefaultStatusMap().Override(norm), nil
}

// Options are the adapter's collaborators; the zero value is usable.
type Options struct {
	// HTTP sends the requests; nil means deps' client (adapters.Deps.HTTP)
	// with Config.Timeout.
	HTTP *http.Client
	// Backoff is the wait between attempts; the zero value is the daemon's
	// default.
	Backoff httpretry.Backoff
	// Sleep waits between attempts; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxListPages is the last page of the ticket list Freshdesk serves;
	// zero means 300. Tests lower it together with the fake's.
	MaxListPages int
}

// Adapter mirrors guest requests into a Freshdesk helpdesk. It is safe for
// concurrent use.
type Adapter struct {
	*saas.Helpdesk[thread]
	base     string // https://hotel.freshdesk.com
	cfg      Config
	groups   map[string]int64
	tags     []string
	since    time.Time
	status   adapters.StatusMap
	log      *slog.Logger
	http     *adapters.HTTPClient
	rate     *adapters.Budgets
	maxPages int

	mu        sync.Mutex
	me        saas.Memo[fdAgent]
	names     saas.Names       // agent names by id
	index     map[string]int64 // upstream id -> ticket id, the lowest when several
	followups map[int64]int64  // archived ticket id -> its follow-up
	mark      time.Time        // the index holds every ticket updated before mark - overlap
	scanned   bool             // mark is set
	unsure    bool             // a creation's outcome is unknown: list before trusting the index

	scanMu sync.Mutex // one index refresh at a time
}

// vendor is the adapter as its [saas.Helpdesk] sees it: the primitives
// of Freshdesk's API.
type vendor struct{ *Adapter }

var (
	_ adapters.Helpdesk = (*Adapter)(nil)
	_ adapters.Checker  = (*Adapter)(nil)
)

// Factory builds the adapter from the TICKETBRIDGE_FRESHDESK_* variables
// of deps.Env; see [LoadConfig].
func Factory(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
	return saas.Build(ctx, deps, LoadConfig, New)
}

// New returns an adapter for cfg, checked with [Config.Validate], and the
// status mapping of deps. It makes no request: [Adapter.Check] does.
func New(cfg Config, deps adapters.Deps, opts Options) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	saas.Defaults(&cfg)
	sm, err := statusMap(deps)
	if err != nil {
		return nil, fmt.Errorf("configure freshdesk adapter: %w", err)
	}
	base := urlOf(cfg.AllowInsecureHTTP).Base(cfg.URL)
	since := cfg.Since.Time()
	log := saas.Logger(deps.Logger)
	a := &Adapter{
		base:   base,
		cfg:    cfg,
		groups: cfg.Groups,
		since:  since,
		status: sm,
		log:    log,
		rate: &adapters.Budgets{
			Endpoint: endpoint, TotalHeader: "X-RateLimit-Total", RemainingHeader: "X-RateLimit-Remaining",
			Log: log, What: "freshdesk",
		},
		maxPages:  opts.MaxListPages,
		index:     map[string]int64{},
		followups: map[int64]int64{},
	}
	if a.maxPages <= 0 {
		a.maxPages = defaultMaxListPages
	}
	if cfg.Tag != "none" {
		a.tags = []string{cfg.Tag}
	}
	a.Helpdesk = saas.NewHelpdesk[thread](Name, vendor{a}, validToken, false, a.log)
	key := cfg.APIKey.Reveal()
	a.http = saas.Client{
		Vendor: Name, HTTP: cmp.Or(opts.HTTP, deps.HTTP(cfg.Timeout)), Transport: a.rate.Transport,
		Authorize: func(r *http.Request) { r.SetBasicAuth(key, "X") },
		Secrets:   []string{key},
		Wait:      saas.Wait429,
		Backoff:   opts.Backoff, Sleep: opts.Sleep, Log: log,
	}.New()
	return a, nil
}

// defaultMaxListPages is the last page of Freshdesk's ticket list.
const defaultMaxListPages = 300

// Status returns the adapter's status mapping.
func (a *Adapter) Status() adapters.StatusMap { return a.status }

// Location returns the helpdesk's address (see adapters.Locator).
func (a *Adapter) Location() string { return redact.Place(a.base) }

// TicketURL implements [adapters.TicketLinker]: the ticket's page in
// Freshdesk's agent portal.
func (a *Adapter) TicketURL(ref adapters.Ref) string {
	if _, err := saas.ParseRef(Name, ref); err != nil {
		return "" // ParseRef holds ref to a ticket number's one spelling
	}
	return adapters.WebURL(a.base, "/a/tickets/"+string(ref))
}

// String describes the adapter without its API key.
func (a *Adapter) String() string { return "freshdesk adapter for " + a.base }

// Check asks Freshdesk whose API key it is, and checks that the agent sees
// every ticket, that both custom fields exist as single-line text and that
// every configured group exists.
func (a *Adapter) Check(ctx context.Context) error {
	me, err := a.fetchSelf(ctx)
	if errors.Is(err, adapters.ErrAuth) {
		return fmt.Errorf("check freshdesk credentials: Freshdesk refused the API key: check %sAPI_KEY (or %sAPI_KEY_FILE); it is shown in the profile settings of the agent the bridge acts as (View API key): %w",
			EnvPrefix, EnvPrefix, err)
	}
	if err != nil {
		return fmt.Errorf("check freshdesk credentials: %w", err)
	}
	if me.TicketScope != scopeGlobal {
		return fmt.Errorf("check freshdesk agent: %s (agent %d) has ticket scope %s, but the bridge must see every ticket to find the ones it made: give the agent global access (Admin > Team > Agents > the agent > Scope)",
			adapters.OrNone(me.Contact.Email), me.ID, scopeName(me.TicketScope))
	}
	var fields []fdField
	if _, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url("/ticket_fields"), Op: "check ticket fields"}, nil, &fields); err != nil {
		return fmt.Errorf("check freshdesk ticket fields: %w", err)
	}
	for _, want := range []struct{ name, variable, use string }{
		{a.cfg.IDField, "ID_FIELD", "the id of the guest request a ticket mirrors"},
		{a.cfg.StatusField, "STATUS_FIELD", "the status the bridge last accounted for"},
	} {
		var found *fdField
		for i := range fields {
			if fields[i].Name == want.name {
				found = &fields[i]
			}
		}
		if found == nil {
			return fmt.Errorf("check freshdesk ticket fields: there is no custom ticket field %s (it holds %s): create a single-line text field labelled %q in Admin > Workflows > Ticket Fields, which Freshdesk names %s, or set %s%s to the name of an existing one",
				want.name, want.use, fieldLabel(want.name), want.name, EnvPrefix, want.variable)
		}
		if found.Type != "custom_text" {
			return fmt.Errorf("check freshdesk ticket fields: %s (%s%s) is a field of type %s, but the bridge needs single-line text (custom_text)",
				want.name, EnvPrefix, want.variable, found.Type)
		}
	}
	return saas.CheckGroups(ctx, a.http, Name, EnvPrefix, a.cfg.Group, a.groups, func(id int64) string { return a.url("/groups/" + idString(id)) },
		"no such group in the helpdesk (see Admin > Team > Groups)")
}

func scopeName(scope int) string {
	switch scope {
	case 1:
		return "global access"
	case 2:
		return "group access"
	case 3:
		return "restricted access"
	}
	return strconv.Itoa(scope)
}

// fieldLabel is the label from which Freshdesk derives the API name
// field: cf_guest_request_id comes from "Guest request id".
func fieldLabel(field string) string {
	words := strings.ReplaceAll(strings.TrimPrefix(field, "cf_"), "_", " ")
	if words == "" {
		return field
	}
	return strings.ToUpper(words[:1]) + words[1:]
}

// fetchSelf asks Freshdesk for the agent the API key belongs to.
func (a *Adapter) fetchSelf(ctx context.Context) (fdAgent, error) {
	var me fdAgent
	if _, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url("/agents/me"), Op: "read api agent"}, nil, &me); err != nil {
		return fdAgent{}, err
	}
	if me.ID == 0 {
		return fdAgent{}, errors.New("the answer names no agent")
	}
	a.me.Set(me)
	a.names.Set(me.ID, me.Contact.Name)
	return me, nil
}

// Self returns the id of the API agent, asking Freshdesk once.
func (v vendor) Self(ctx context.Context) (int64, error) {
	got, err := v.me.Get(ctx, v.fetchSelf)
	if err != nil {
		return 0, fmt.Errorf("read freshdesk api agent: %w", err)
	}
	return got.ID, nil
}

// agentName returns the name of agent id, asking Freshdesk about agents
// the adapter has not met. An unknown user (a deleted agent, a contact)
// gets "".
func (a *Adapter) agentName(ctx context.Context, id int64) (string, error) {
	return a.names.Get(ctx, id, func(ctx context.Context, id int64) (string, error) {
		var ag fdAgent
		_, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url("/agents/" + idString(id)), Op: "read agent"}, nil, &ag)
		if err != nil && !errors.Is(err, adapters.ErrNotFound) {
			return "", fmt.Errorf("read freshdesk agent %d: %w", id, err)
		}
		return ag.Contact.Name, nil
	})
}

// url returns the API address of path (below /api/v2) with query, given as
// name, value pairs.
func (a *Adapter) url(path string, query ...string) string {
	return saas.URL(a.base+"/api/v2", path, query...)
}
