package zendesk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// Name is the adapter's registry name.
const Name = "zendesk"

// externalPrefix starts the external_id of every ticket the bridge makes;
// the upstream ticket id follows.
const externalPrefix = "ticketbridge:"

// Statuses of Zendesk Support tickets.
const (
	statusNew     = "new"
	statusOpen    = "open"
	statusPending = "pending"
	statusHold    = "hold"
	statusSolved  = "solved"
	statusClosed  = "closed"
)

// DefaultStatusMap maps the API's statuses onto Zendesk's and back.
//
// Down: new stays new, assigned and in_progress are open, the four closing
// statuses are solved; the bridge never sets closed (Zendesk's automation
// closes solved tickets after some days, and a closed ticket can no longer
// be changed). Up: open, pending and on-hold are all in_progress (the
// team works on it, or waits for the guest or a third party), solved is
// done; new and closed are not carried up (only Zendesk itself leaves
// them: a ticket is new until first changed, and closed follows solved).
func DefaultStatusMap() adapters.StatusMap {
	return adapters.StatusMap{
		ToHelpdesk: map[guestapi.Status]string{
			guestapi.StatusNew:        statusNew,
			guestapi.StatusAssigned:   statusOpen,
			guestapi.StatusInProgress: statusOpen,
			guestapi.StatusDone:       statusSolved,
			guestapi.StatusCompleted:  statusSolved,
			guestapi.StatusConfirmed:  statusSolved,
			guestapi.StatusCancelled:  statusSolved,
		},
		FromHelpdesk: map[string]guestapi.Status{
			statusOpen:    guestapi.StatusInProgress,
			statusPending: guestapi.StatusInProgress,
			statusHold:    guestapi.StatusInProgress,
			statusSolved:  guestapi.StatusDone,
		},
	}
}

// Options are the adapter's collaborators; the zero value is usable.
type Options struct {
	// HTTP sends the requests; nil means deps' client (adapters.Deps.HTTP)
	// with Config.Timeout.
	HTTP *http.Client
	// Backoff is the wait between attempts; the zero value is the
	// daemon's default.
	Backoff httpretry.Backoff
	// Sleep waits between attempts; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// EventPages caps the export pages one Changes call reads; zero means
	// [DefaultEventPages].
	EventPages int
}

// Adapter mirrors guest requests into a Zendesk Support account. It is
// safe for concurrent use.
type Adapter struct {
	*saas.Helpdesk[chain]
	base     string // https://hotel.zendesk.com
	cfg      Config
	groups   map[string]int64
	tags     []string
	since    int64
	status   adapters.StatusMap
	log      *slog.Logger
	http     *adapters.HTTPClient // reads, creations with an Idempotency-Key, status changes
	once     *adapters.HTTPClient // writes that add a comment: sent once, see Append
	maxPages int
	budget   saas.Budget // updates per ticket (see Update)

	mu      sync.Mutex
	me      saas.Memo[zdUser]
	tickets map[int64]ticketInfo                // Zendesk ticket id -> what it mirrors
	names   saas.Names                          // user names by id
	holds   map[adapters.Ref]adapters.HeldError // status changes Zendesk holds back
}

// vendor is the adapter as its [saas.Helpdesk] sees it: the primitives
// of Zendesk's API.
type vendor struct{ *Adapter }

// ticketInfo is what the adapter remembers of a ticket it met in the event
// export: the upstream id it mirrors ("" for a ticket that mirrors none)
// and the first ticket of its follow-up chain. For one that mirrored none,
// read is the Unix second of its updated_at when it was read: a change
// from then on may have connected it (see [Adapter.ticketInfos]).
type ticketInfo struct {
	upstream string
	root     int64
	read     int64
}

var _ adapters.Helpdesk = (*Adapter)(nil)
var _ adapters.Checker = (*Adapter)(nil)
var _ adapters.Holder = (*Adapter)(nil)
var _ saas.Fielder[chain] = vendor{}

// Factory builds the adapter from the TICKETBRIDGE_ZENDESK_* variables of
// deps.Env; see [LoadConfig].
func Factory(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
	return saas.Build(ctx, deps, LoadConfig, New)
}

// New returns an adapter for cfg, checked with [Config.Validate]. It makes
// no request: [Adapter.Check] does.
func New(cfg Config, deps adapters.Deps, opts Options) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	saas.Defaults(&cfg)
	base := urlOf(cfg.AllowInsecureHTTP).Base(cfg.URL)
	since := cfg.EventsSince.Time().Unix()
	log := saas.Logger(deps.Logger)
	a := &Adapter{
		base:     base,
		cfg:      cfg,
		groups:   cfg.Groups,
		since:    since,
		status:   DefaultStatusMap().Override(deps),
		log:      log,
		maxPages: opts.EventPages,
		tickets:  map[int64]ticketInfo{},
		holds:    map[adapters.Ref]adapters.HeldError{},
		budget:   saas.Budget{N: ticketUpdates.N, Window: ticketUpdates.Window, Why: ticketUpdates.Why},
	}
	if a.maxPages <= 0 {
		a.maxPages = DefaultEventPages
	}
	if cfg.Tag != "none" {
		a.tags = []string{cfg.Tag}
	}
	user, token := cfg.Email+"/token", cfg.Token.Reveal()
	client := saas.Client{
		Vendor: Name, HTTP: cmp.Or(opts.HTTP, deps.HTTP(cfg.Timeout)),
		Authorize: func(r *http.Request) { r.SetBasicAuth(user, token) },
		Secrets:   []string{token},
		Backoff:   opts.Backoff, Sleep: opts.Sleep, Log: log,
	}
	a.Helpdesk = saas.NewHelpdesk[chain](Name, vendor{a}, nil, false, a.log)
	a.http = client.New()
	client.MaxAttempts = 1
	a.once = client.New()
	return a, nil
}

// Status returns the adapter's status mapping.
func (a *Adapter) Status() adapters.StatusMap { return a.status }

// Location returns the helpdesk's address (see adapters.Locator).
func (a *Adapter) Location() string { return redact.Place(a.base) }

// TicketURL implements [adapters.TicketLinker]: the ticket's page in
// Zendesk's agent workspace. A ticket followed up after it closed is
// linked from there.
func (a *Adapter) TicketURL(ref adapters.Ref) string {
	if _, err := saas.ParseRef(Name, ref); err != nil {
		return "" // ParseRef holds ref to a ticket number's one spelling
	}
	return adapters.WebURL(a.base, "/agent/tickets/"+string(ref))
}

// String describes the adapter without its token.
func (a *Adapter) String() string {
	return fmt.Sprintf("zendesk adapter for %s as %s", a.base, a.cfg.Email)
}

// Check asks Zendesk who the credentials belong to and checks that the
// user is an admin and that every configured group exists.
func (a *Adapter) Check(ctx context.Context) error {
	var out struct {
		User zdUser `json:"user"`
	}
	_, err := a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url("/users/me"), Op: "check credentials"}, nil, &out)
	if errors.Is(err, adapters.ErrAuth) {
		return fmt.Errorf("check zendesk credentials: Zendesk refused %s with the API token: check %sEMAIL, the token in %sTOKEN (or %sTOKEN_FILE), and that token access is enabled in Admin Center > Apps and integrations > APIs > Zendesk API: %w",
			a.cfg.Email, EnvPrefix, EnvPrefix, EnvPrefix, err)
	}
	if err != nil {
		return fmt.Errorf("check zendesk credentials: %w", err)
	}
	if out.User.ID == 0 {
		return fmt.Errorf("check zendesk credentials: Zendesk answered as an anonymous user: check %sEMAIL and the API token", EnvPrefix)
	}
	if out.User.Role != "admin" {
		return fmt.Errorf("check zendesk credentials: %s is a Zendesk %s, but the bridge reads agents' work through the incremental ticket event export, which needs an admin: give the user the admin role or use an admin's address and token", a.cfg.Email, adapters.OrNone(out.User.Role))
	}
	a.me.Set(out.User)
	return saas.CheckGroups(ctx, a.http, Name, EnvPrefix, a.cfg.Group, a.groups, func(id int64) string { return a.url(fmt.Sprintf("/groups/%d", id)) },
		"no such group in the account (see Admin Center > People > Groups)")
}

// Self returns the id of the API user, asking Zendesk once.
func (v vendor) Self(ctx context.Context) (int64, error) {
	me, err := v.me.Get(ctx, func(ctx context.Context) (zdUser, error) {
		var out struct {
			User zdUser `json:"user"`
		}
		if _, err := v.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: v.url("/users/me"), Op: "read api user"}, nil, &out); err != nil {
			return zdUser{}, fmt.Errorf("read zendesk api user: %w", err)
		}
		if out.User.ID == 0 {
			return zdUser{}, fmt.Errorf("read zendesk api user: Zendesk answered as an anonymous user: check %sEMAIL and the API token: %w", EnvPrefix, adapters.ErrAuth)
		}
		return out.User, nil
	})
	return me.ID, err
}

// url returns the API address of path (below /api/v2, without .json) with
// query.
func (a *Adapter) url(path string, query ...string) string {
	return saas.URL(a.base+"/api/v2", path+".json", query...)
}
