package zammad

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// Name is the adapter's registry name.
const Name = "zammad"

// Zammad's default ticket states.
const (
	stateNew             = "new"
	stateOpen            = "open"
	statePendingReminder = "pending reminder"
	statePendingClose    = "pending close"
	stateClosed          = "closed"
)

// DefaultStatusMap maps the API's statuses onto Zammad's default states and
// back.
//
// Down: new stays new, assigned and in_progress are open, the four closing
// statuses are closed. Up: open and pending reminder (the team works on it,
// or waits until a set time) are in_progress, pending close and closed are
// done. New is not carried up (agents cannot choose it once a ticket left
// it), nor are merged and removed (a merged ticket lives on in another
// one; removed tickets are gone).
func DefaultStatusMap() adapters.StatusMap {
	return adapters.StatusMap{
		ToHelpdesk: map[guestapi.Status]string{
			guestapi.StatusNew:        stateNew,
			guestapi.StatusAssigned:   stateOpen,
			guestapi.StatusInProgress: stateOpen,
			guestapi.StatusDone:       stateClosed,
			guestapi.StatusCompleted:  stateClosed,
			guestapi.StatusConfirmed:  stateClosed,
			guestapi.StatusCancelled:  stateClosed,
		},
		FromHelpdesk: map[string]guestapi.Status{
			stateOpen:            guestapi.StatusInProgress,
			statePendingReminder: guestapi.StatusInProgress,
			statePendingClose:    guestapi.StatusDone,
			stateClosed:          guestapi.StatusDone,
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
	// MaxEvents caps the events of one Changes call; 0 means
	// [DefaultMaxEvents].
	MaxEvents int
}

// DefaultMaxEvents is how many events one Changes call returns at most.
const DefaultMaxEvents = 500

// Adapter mirrors guest requests into a Zammad system. It is safe for
// concurrent use.
type Adapter struct {
	*saas.Helpdesk[zmTicket]
	base      string // https://helpdesk.hotel.example
	cfg       Config
	groups    map[string]string
	since     time.Time
	status    adapters.StatusMap
	log       *slog.Logger
	http      *adapters.HTTPClient
	maxEvents int

	me    saas.Memo[zmUser]
	names saas.Names // user display names by id
}

// vendor is the adapter as its [saas.Helpdesk] sees it: the primitives
// of Zammad's API.
type vendor struct{ *Adapter }

var _ adapters.Helpdesk = (*Adapter)(nil)
var _ adapters.Checker = (*Adapter)(nil)

// Factory builds the adapter from the TICKETBRIDGE_ZAMMAD_* variables of
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
	since := cfg.EventsSince.Time()
	log := saas.Logger(deps.Logger)
	a := &Adapter{
		base:      base,
		cfg:       cfg,
		groups:    cfg.Groups,
		since:     since,
		status:    DefaultStatusMap().Override(deps),
		log:       log,
		maxEvents: opts.MaxEvents,
	}
	if a.maxEvents <= 0 {
		a.maxEvents = DefaultMaxEvents
	}
	a.Helpdesk = saas.NewHelpdesk[zmTicket](Name, vendor{a}, nil, true, a.log)
	token := cfg.Token.Reveal()
	a.http = saas.Client{
		Vendor: Name, HTTP: cmp.Or(opts.HTTP, deps.HTTP(cfg.Timeout)),
		Authorize: func(r *http.Request) { r.Header.Set("Authorization", "Token token="+token) },
		Secrets:   []string{token},
		Backoff:   opts.Backoff, Sleep: opts.Sleep, Log: log,
	}.New()
	return a, nil
}

// Status returns the adapter's status mapping.
func (a *Adapter) Status() adapters.StatusMap { return a.status }

// Location returns the helpdesk's address (see adapters.Locator).
func (a *Adapter) Location() string { return redact.Place(a.base) }

// TicketURL implements [adapters.TicketLinker]: the ticket's zoom view in
// Zammad's agent interface, by the ticket's id (the ref), not its number.
func (a *Adapter) TicketURL(ref adapters.Ref) string {
	if _, err := saas.ParseRef(Name, ref); err != nil {
		return "" // ParseRef holds ref to a ticket number's one spelling
	}
	return adapters.WebURL(a.base, "/#ticket/zoom/"+string(ref))
}

// String describes the adapter without its token.
func (a *Adapter) String() string {
	return fmt.Sprintf("zammad adapter for %s (attribute %s, customer %s)", a.base, a.cfg.IDField, a.cfg.Customer)
}

// GoString is String, so that %#v does not show the token.
func (a *Adapter) GoString() string { return a.String() }

// url returns the API address of path (below /api/v1) with query.
func (a *Adapter) url(path string, query url.Values) string {
	u := a.base + "/api/v1" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// get reads path into out.
func (a *Adapter) get(ctx context.Context, path string, query url.Values, op string, out any) (*adapters.HTTPResponse, error) {
	return a.http.JSON(ctx, adapters.HTTPRequest{Method: http.MethodGet, URL: a.url(path, query), Op: op}, nil, out)
}

// Check asks Zammad who the token belongs to, checks that the user has
// access to the configured groups, that the ticket attribute holding
// the upstream id exists, is a text field and is applied, and that the
// due date's attribute, when one is configured, exists, is a Date & Time
// attribute and allows past dates. A token without admin.object, which
// may not read the object manager, has both attributes checked by their
// presence in a ticket only (not their format or options). Each failure
// says what to change in Zammad or in the configuration.
func (a *Adapter) Check(ctx context.Context) error {
	if err := a.Open(); err != nil {
		return err
	}
	var me zmUser
	_, err := a.get(ctx, "/users/me", url.Values{"expand": {"true"}}, "check token", &me)
	if errors.Is(err, adapters.ErrAuth) {
		return fmt.Errorf("check zammad token: Zammad refused the token of %sTOKEN: check that Token Access is enabled (Admin > System > API), and create a token under avatar > Profile > Token Access with the permission ticket.agent: %w", EnvPrefix, err)
	}
	if err != nil {
		return fmt.Errorf("check zammad token: %w", err)
	}
	if me.ID == 0 {
		return fmt.Errorf("check zammad token: Zammad answered without a user: check %sURL", EnvPrefix)
	}
	a.me.Set(me)
	if err := a.checkGroups(me); err != nil {
		return err
	}
	return a.checkAttribute(ctx)
}

// checkGroups checks that the API user may create and change tickets in
// every configured group. A Zammad that does not list the user's groups
// by name is not checked here; a creation then fails with its own error.
func (a *Adapter) checkGroups(me zmUser) error {
	if me.Groups == nil {
		a.log.LogAttrs(context.Background(), slog.LevelInfo, "zammad did not list the api user's groups; group access is not checked",
			slog.String("op", "check groups"))
		return nil
	}
	check := map[string]string{a.cfg.Group: EnvPrefix + "GROUP"}
	for dept, g := range a.groups {
		check[g] = fmt.Sprintf("%sGROUPS (department %s)", EnvPrefix, dept)
	}
	names := make([]string, 0, len(check))
	for g := range check {
		names = append(names, g)
	}
	slices.Sort(names)
	for _, g := range names {
		access := me.Groups[g]
		if !slices.Contains(access, "full") && !(slices.Contains(access, "create") && slices.Contains(access, "change")) {
			return fmt.Errorf("check zammad group %q named in %s: the user %s has no full access to it: create the group (Admin > Manage > Groups) if it does not exist and give the user full access to it (Admin > Manage > Users, or through a role)",
				g, check[g], me.Login)
		}
	}
	return nil
}

// attributeHelp says how to create the ticket attribute.
func (a *Adapter) attributeHelp() string {
	return fmt.Sprintf("create it in Zammad under Admin > System > Objects > Ticket > New Attribute: Name %q, Display \"Guest request\", Format Text field, Maximal 255 (at least 36), then apply it with Update Database (or set %sID_FIELD to the attribute you use)",
		a.cfg.IDField, EnvPrefix)
}

// checkAttribute checks the ticket attribute through the object manager
// (admin.object); a token without that permission is checked by reading a
// ticket instead.
func (a *Adapter) checkAttribute(ctx context.Context) error {
	var attrs []zmAttribute
	_, err := a.get(ctx, "/object_manager_attributes", nil, "check ticket attribute", &attrs)
	if errors.Is(err, adapters.ErrAuth) {
		return a.checkAttributeByTicket(ctx)
	}
	if err != nil {
		return fmt.Errorf("check zammad ticket attribute %s: %w", a.cfg.IDField, err)
	}
	i := slices.IndexFunc(attrs, func(x zmAttribute) bool { return x.Object == "Ticket" && x.Name == a.cfg.IDField })
	if i < 0 {
		return fmt.Errorf("check zammad ticket attribute %s: Zammad has no ticket attribute %q, where the bridge keeps the id of the guest request: %s", a.cfg.IDField, a.cfg.IDField, a.attributeHelp())
	}
	at := attrs[i]
	switch {
	case at.ToCreate:
		return fmt.Errorf("check zammad ticket attribute %s: the attribute is defined but not applied yet: press Update Database in Admin > System > Objects", a.cfg.IDField)
	case at.DataType != "input":
		return fmt.Errorf("check zammad ticket attribute %s: its format is %q, want a Text field (input): create a text attribute and point %sID_FIELD at it", a.cfg.IDField, at.DataType, EnvPrefix)
	case !at.Active:
		return fmt.Errorf("check zammad ticket attribute %s: the attribute is inactive: activate it in Admin > System > Objects > Ticket", a.cfg.IDField)
	case at.maxLength() != 0 && at.maxLength() < 36:
		return fmt.Errorf("check zammad ticket attribute %s: its Maximal length is %d, but upstream ids have 36 characters: raise it to 255", a.cfg.IDField, at.maxLength())
	}
	return a.checkDueAttribute(attrs)
}

// dueHelp says how to create the due date's attribute.
func (a *Adapter) dueHelp() string {
	return fmt.Sprintf("create it in Zammad under Admin > System > Objects > Ticket > New Attribute: Name %q, Format Date & Time, Allow future and Allow past on, then apply it with Update Database (or unset %sDUE_ATTRIBUTE to carry no due date)",
		a.cfg.DueAttribute, EnvPrefix)
}

// checkDueAttribute checks the due date's attribute, when one is
// configured, in the object manager's list: a Date & Time attribute,
// applied, active, allowing future and past dates. A due date passes
// while the ticket is open, and Zammad refuses every update of a ticket
// whose value has passed in an attribute that does not allow past dates.
func (a *Adapter) checkDueAttribute(attrs []zmAttribute) error {
	name := a.cfg.DueAttribute
	if name == "" {
		return nil
	}
	what := fmt.Sprintf("check zammad due date attribute %s (%sDUE_ATTRIBUTE)", name, EnvPrefix)
	i := slices.IndexFunc(attrs, func(x zmAttribute) bool { return x.Object == "Ticket" && x.Name == name })
	if i < 0 {
		return fmt.Errorf("%s: Zammad has no ticket attribute %q: %s", what, name, a.dueHelp())
	}
	at := attrs[i]
	switch {
	case at.ToCreate:
		return fmt.Errorf("%s: the attribute is defined but not applied yet: press Update Database in Admin > System > Objects", what)
	case at.DataType != "datetime":
		return fmt.Errorf("%s: its format is %q, want Date & Time (datetime): %s", what, at.DataType, a.dueHelp())
	case !at.Active:
		return fmt.Errorf("%s: the attribute is inactive: activate it in Admin > System > Objects > Ticket", what)
	case !at.allows("past"):
		return fmt.Errorf("%s: Allow past is off: a due date passes while the ticket is open, and Zammad then refuses every update of the ticket: turn Allow past on in Admin > System > Objects > Ticket", what)
	case !at.allows("future"):
		return fmt.Errorf("%s: Allow future is off, so Zammad refuses the due dates to come: turn Allow future on in Admin > System > Objects > Ticket", what)
	}
	return nil
}

// checkAttributeByTicket looks for the attribute among the fields of a
// ticket the token can read. Zammad answers every column of a ticket, so
// an existing attribute shows up (null when empty).
func (a *Adapter) checkAttributeByTicket(ctx context.Context) error {
	var ts []zmTicket
	if _, err := a.get(ctx, "/tickets", url.Values{"page": {"1"}, "per_page": {"1"}}, "check ticket attribute", &ts); err != nil {
		return fmt.Errorf("check zammad ticket attribute %s: %w", a.cfg.IDField, err)
	}
	if len(ts) == 0 {
		a.log.LogAttrs(ctx, slog.LevelWarn, "the zammad token may not read the object manager (admin.object) and sees no ticket: the ticket attribute is not checked",
			slog.String("op", "check ticket attribute"), slog.String("attribute", a.cfg.IDField))
		return nil
	}
	if _, ok := ts[0].attr(a.cfg.IDField); !ok {
		return fmt.Errorf("check zammad ticket attribute %s: Zammad's tickets have no attribute %q, where the bridge keeps the id of the guest request: %s", a.cfg.IDField, a.cfg.IDField, a.attributeHelp())
	}
	if _, ok := ts[0].attr(a.cfg.DueAttribute); a.cfg.DueAttribute != "" && !ok {
		return fmt.Errorf("check zammad due date attribute %s (%sDUE_ATTRIBUTE): Zammad's tickets have no attribute %q: %s", a.cfg.DueAttribute, EnvPrefix, a.cfg.DueAttribute, a.dueHelp())
	}
	return nil
}

// Self returns the id of the API user, asking Zammad once.
func (v vendor) Self(ctx context.Context) (int64, error) {
	me, err := v.me.Get(ctx, func(ctx context.Context) (zmUser, error) {
		var out zmUser
		if _, err := v.get(ctx, "/users/me", nil, "read api user", &out); err != nil {
			return zmUser{}, fmt.Errorf("read zammad api user: %w", err)
		}
		if out.ID == 0 {
			return zmUser{}, fmt.Errorf("read zammad api user: Zammad answered without a user: check %sURL", EnvPrefix)
		}
		return out, nil
	})
	return me.ID, err
}

// userName returns the display name of user id, asking Zammad once. A user
// the token may not read or Zammad no longer has gets "".
func (a *Adapter) userName(ctx context.Context, id int64) (string, error) {
	return a.names.Get(ctx, id, func(ctx context.Context, id int64) (string, error) {
		var u zmUser
		_, err := a.get(ctx, "/users/"+idString(id), nil, "read user", &u)
		switch {
		case errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrAuth):
			return "", nil
		case err != nil:
			return "", fmt.Errorf("read zammad user %d: %w", id, err)
		case u.ID == 0:
			return "", nil
		}
		return u.name(), nil
	})
}

// isPending reports whether a state needs a pending till: Zammad's pending
// states (pending reminder, pending close, and custom ones named alike).
func isPending(state string) bool { return strings.HasPrefix(state, "pending") }
