// Package rt is the Request Tracker adapter of ticketbridge: it mirrors
// guest requests into RT 5 tickets over RT's REST2 API and reads the support
// team's replies, comments and status changes back.
//
// It follows the REST2 documentation shipped with RT 5.0.3 (the POD of
// lib/RT/REST2.pm, "RT::REST2 - RT REST API v. 2.0 under /REST/2.0/") and is
// tested against Debian's request-tracker5 5.0.3 (deploy/dev/rt.sh). It is
// not a general RT client, and it does not follow the _url links in RT's
// answers: those use RT's WebBaseURL, which need not be the address the
// bridge reaches RT on.
//
// How it keeps RT and the bridge apart:
//
//   - Each mirrored ticket holds the upstream ticket id in a ticket custom
//     field (TICKETBRIDGE_RT_ID_FIELD, "Guest Request ID"), so Lookup finds
//     it with a TicketSQL search after the bridge's state is lost.
//   - Each upstream message becomes one transaction, correspondence when the
//     guest sees it and a comment otherwise, whose text/plain body starts
//     with the author, the author's type and the time, and ends with the
//     line "[ticketbridge message <id>]". RT keeps that body verbatim, so
//     Append reads the markers a ticket holds before it writes, and a repeat
//     after a crash writes nothing twice.
//   - Changes finds new work with one TransactionSQL search on transaction
//     ids after the cursor (correspondence, comments and status changes on
//     tickets in the configured queues, not created by the bridge's own RT
//     user). Transaction ids grow with every write in RT, so the cursor is
//     exact; a TicketSQL search on LastUpdated would have a resolution of
//     one second and would still need each ticket's history read. Status
//     changes RT makes itself (RT_System: a scrip reopening a ticket on
//     correspondence) stay in RT, so a mirrored guest message never comes
//     back as a status change. A transaction by another user whose body
//     ends in a marker is the bridge's too and is skipped.
//   - MarkSent records "<transaction id>=<upstream message id>" in a second,
//     multi-value custom field (TICKETBRIDGE_RT_SENT_FIELD, "Guest Request
//     Sent"), and Lookup returns those records. A custom field change
//     notifies nobody and shows in the ticket's history as a one-liner,
//     where a comment would mail every AdminCc for every delivered reply.
//     Set the variable to "none" to go without: after a state loss the
//     engine then relies on the API's Idempotency-Key retention alone.
//   - RT opens a new or closed ticket on correspondence (its scrip "On
//     Correspond Open Inactive Tickets"). A mirrored guest message leaves a
//     new ticket new (until an agent takes it up) and a closed one closed
//     when it is history being filled in; a new guest message on a closed
//     ticket reopens it.
//   - A bridge killed while RT creates a ticket leaves that create running
//     in RT; the restarted bridge may search before it ends and create a
//     second ticket. EnsureTicket searches again after creating, and
//     duplicates are merged (RT's way) into the one holding the mirrored
//     messages.
//   - Tickets are followed in the queues the adapter is configured with; a
//     ticket an agent moves to another queue is no longer synced.
//   - RT leaves deleted tickets out of every search. An agent deleting a
//     ticket is reported (as cancelled, by default), but should the bridge
//     lose its state afterwards, Lookup cannot find that ticket and the
//     request gets a new one. Agents should reject rather than delete.
//
// Every request goes through [adapters.HTTPClient], which retries RT's
// errors and slow answers with the same backoff as the API client and
// keeps the token and password out of errors and logs.
package rt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
)

// Name is the adapter's registry name.
const Name = "rt"

// DefaultStatusMap maps the API's statuses to RT's default lifecycle (new,
// open, stalled, resolved, rejected, deleted) and back. Both directions can
// be overridden with TICKETBRIDGE_STATUS_TO_HELPDESK and
// TICKETBRIDGE_STATUS_FROM_HELPDESK.
func DefaultStatusMap() adapters.StatusMap {
	return adapters.StatusMap{
		ToHelpdesk: map[guestapi.Status]string{
			guestapi.StatusNew:        "new",
			guestapi.StatusAssigned:   "open",
			guestapi.StatusInProgress: "open",
			guestapi.StatusDone:       "resolved",
			guestapi.StatusCompleted:  "resolved",
			guestapi.StatusConfirmed:  "resolved",
			guestapi.StatusCancelled:  "rejected",
		},
		FromHelpdesk: map[string]guestapi.Status{
			"new":      guestapi.StatusNew,
			"open":     guestapi.StatusInProgress,
			"stalled":  guestapi.StatusInProgress,
			"resolved": guestapi.StatusDone,
			"rejected": guestapi.StatusCancelled,
			"deleted":  guestapi.StatusCancelled,
		},
	}
}

// Factory builds the adapter from the TICKETBRIDGE_RT_* variables in
// deps.Env. It does not reach RT; [Adapter.Check] does.
func Factory(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
	cfg, err := LoadConfig(ctx, deps.Env)
	if err != nil {
		return nil, err
	}
	return New(ctx, cfg, deps)
}

// Adapter is the Request Tracker [adapters.Helpdesk]. It is safe for
// concurrent use.
type Adapter struct {
	cfg    Config
	queues map[string]string // department -> queue name
	status adapters.StatusMap
	log    *slog.Logger
	c      *client

	// Learnt from RT on first use, again after a failure.
	setupMu sync.Mutex
	setup   *setup

	mu      sync.Mutex
	tickets map[int64]string // RT ticket id -> upstream ticket id, "" for other tickets

	// sentLocks serialise MarkSent per ticket: REST2 sets a multi-value
	// custom field to the whole list it is given, so two concurrent
	// read-modify-writes would drop each other's value.
	sentLocks [64]sync.Mutex
}

// setup is what the adapter learns from RT before its first real call.
type setup struct {
	me       userRef
	meID     int64
	queueIDs map[string]int64 // queue name -> id
	idCF     int64
	sentCF   int64 // 0 when the delivery record is off
}

// Options are the adapter's hooks for tests and benchmarks.
type Options struct {
	// HTTP sends the requests; nil means a client with Config.Timeout.
	HTTP *http.Client
	// Backoff is the wait between attempts; the zero value is the daemon's
	// default, shared with the API client.
	Backoff httpretry.Backoff
	// Sleep waits between attempts; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for Retry-After dates; nil means time.Now.
	Now func() time.Time
}

// New builds the adapter from cfg (see [Config] for its defaults) without
// reaching RT. Tests use it; the daemon uses [Factory].
func New(ctx context.Context, cfg Config, deps adapters.Deps) (*Adapter, error) {
	return NewWithOptions(ctx, cfg, deps, Options{})
}

// NewWithOptions is [New] with hooks.
func NewWithOptions(_ context.Context, cfg Config, deps adapters.Deps, opts Options) (*Adapter, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base, err := baseURL(cfg.URL, cfg.AllowInsecureHTTP)
	if err != nil {
		return nil, err
	}
	queues, err := ParseQueues(cfg.Queues)
	if err != nil {
		return nil, err
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	hc := opts.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	httpc := &adapters.HTTPClient{
		HTTP:    hc,
		Backoff: opts.Backoff,
		Sleep:   opts.Sleep,
		Now:     opts.Now,
		Header:  http.Header{"User-Agent": {"ticketbridge-rt"}},
		Logger:  logger,
	}
	return &Adapter{
		cfg:     cfg,
		queues:  queues,
		status:  DefaultStatusMap().Override(deps),
		log:     logger,
		c:       newClient(base, cfg, httpc),
		tickets: map[int64]string{},
	}, nil
}

// Name returns "rt".
func (a *Adapter) Name() string { return Name }

// StatusMap returns the adapter's effective status mapping.
func (a *Adapter) StatusMap() adapters.StatusMap { return a.status }

// Close releases nothing; the adapter holds no connection between calls.
func (a *Adapter) Close() error { return nil }

// queueNames returns the default queue and the mapped ones, each once.
func (a *Adapter) queueNames() []string {
	names := []string{a.cfg.Queue}
	for _, q := range a.queues {
		if !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	slices.Sort(names[1:])
	return names
}

// queueFor returns the queue of a department: the mapped one (the code
// matched exactly, else ignoring case), else the default queue.
func (a *Adapter) queueFor(dept string) string {
	if q, ok := a.queues[dept]; ok {
		return q
	}
	for d, q := range a.queues {
		if strings.EqualFold(d, dept) {
			return q
		}
	}
	return a.cfg.Queue
}

// ready returns the setup, learning it from RT when it is not known yet.
func (a *Adapter) ready(ctx context.Context) (*setup, error) {
	a.setupMu.Lock()
	defer a.setupMu.Unlock()
	if a.setup != nil {
		return a.setup, nil
	}
	s, err := a.learn(ctx)
	if err != nil {
		return nil, err
	}
	a.setup = s
	return s, nil
}

// Check reaches RT, checks that it accepts the credentials, that each
// configured queue exists and lets the bridge create tickets, and that the
// custom fields exist and apply to every queue. Its error lists every
// problem found and says exactly what to create or grant in RT.
func (a *Adapter) Check(ctx context.Context) error {
	s, err := a.learn(ctx)
	if err != nil {
		return err
	}
	a.setupMu.Lock()
	a.setup = s
	a.setupMu.Unlock()
	return nil
}

var tokenUserRE = regexp.MustCompile(`^\d+-(\d+)-[0-9A-Fa-f]+$`)

// learn finds the bridge's RT user, the queues and the custom fields.
func (a *Adapter) learn(ctx context.Context) (*setup, error) {
	s := &setup{queueIDs: map[string]int64{}}
	if err := a.learnUser(ctx, s); err != nil {
		return nil, err
	}
	var problems []error
	cfNames := []string{a.cfg.IDField}
	if a.sentOn() {
		cfNames = append(cfNames, a.cfg.SentField)
	}
	missing := map[string][]string{} // custom field -> queues lacking it
	for _, name := range a.queueNames() {
		var q struct {
			ID                 flexID `json:"id"`
			Name               string `json:"Name"`
			TicketCustomFields []struct {
				ID   flexID `json:"id"`
				Name string `json:"name"`
			} `json:"TicketCustomFields"`
			Hyperlinks []struct {
				Ref  string `json:"ref"`
				Type string `json:"type"`
			} `json:"_hyperlinks"`
		}
		_, err := a.c.get(ctx, "check queue", "/queue/"+url.PathEscape(name), nil, &q)
		switch {
		case isNotFound(err) || (err == nil && q.ID == 0):
			problems = append(problems, fmt.Errorf("queue %q: RT has no such queue, or the user %s lacks the right SeeQueue on it (Admin → Queues)", name, s.me.name()))
			continue
		case errors.Is(err, adapters.ErrAuth):
			problems = append(problems, fmt.Errorf("queue %q: the user %s may not see it: grant SeeQueue on it (Admin → Queues → %s → User Rights): %w", name, s.me.name(), name, err))
			continue
		case err != nil:
			return nil, fmt.Errorf("check queue %q: %w", name, err)
		}
		s.queueIDs[name] = int64(q.ID)
		canCreate := false
		for _, h := range q.Hyperlinks {
			if h.Ref == "create" && h.Type == "ticket" {
				canCreate = true
			}
		}
		if !canCreate {
			problems = append(problems, fmt.Errorf("queue %q: the user %s lacks the right CreateTicket on it; grant it %s (Admin → Queues → %s → User Rights)", name, s.me.name(), bridgeRights, name))
		}
		for i, cf := range cfNames {
			found := int64(0)
			for _, have := range q.TicketCustomFields {
				if strings.EqualFold(have.Name, cf) {
					found = int64(have.ID)
				}
			}
			if found == 0 {
				missing[cf] = append(missing[cf], name)
				continue
			}
			dst := &s.idCF
			if i == 1 {
				dst = &s.sentCF
			}
			if *dst != 0 && *dst != found {
				problems = append(problems, fmt.Errorf("custom field %q: queues use two different custom fields of that name (ids %d and %d); apply one field to every queue the bridge uses", cf, *dst, found))
			}
			*dst = found
		}
	}
	for i, cf := range cfNames {
		qs := missing[cf]
		if len(qs) == 0 {
			continue
		}
		kind, variable := "Enter one value", "ID_FIELD"
		if i == 1 {
			kind, variable = "Enter multiple values", "SENT_FIELD"
		}
		problems = append(problems, fmt.Errorf("custom field %q (%s%s) does not apply to the queue(s) %s, or the user %s may not see it. "+
			"In RT as an administrator: Admin → Custom Fields → Create: Name %q, Type %q, Applies to \"Tickets\" (skip when it exists); "+
			"on its \"Applies to\" page tick %s; on its \"User Rights\" page grant %s SeeCustomField and ModifyCustomField",
			cf, EnvPrefix, variable, quoteList(qs), s.me.name(), cf, kind, quoteList(qs), s.me.name()))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("check RT at %s: %w", a.c.base, errors.Join(problems...))
	}
	return s, nil
}

// bridgeRights lists the rights the bridge's RT user needs on each queue.
const bridgeRights = "SeeQueue, ShowTicket, CreateTicket, ModifyTicket, ReplyToTicket, CommentOnTicket, ShowTicketComments, SeeCustomField and ModifyCustomField"

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// learnUser finds the RT user the credentials belong to: the bridge's own
// user, whose writes Changes leaves out.
func (a *Adapter) learnUser(ctx context.Context, s *setup) error {
	var who, how string
	switch {
	case a.cfg.Token != "":
		how = EnvPrefix + "TOKEN"
		if m := tokenUserRE.FindStringSubmatch(a.cfg.Token); m != nil {
			who = m[1]
		} else if a.cfg.User != "" {
			who = a.cfg.User
		} else {
			return fmt.Errorf("find the bridge's RT user: %sTOKEN is not in RT's usual form <n>-<user id>-<hex>; set %sUSER to the name of the token's RT user", EnvPrefix, EnvPrefix)
		}
	default:
		who, how = a.cfg.User, EnvPrefix+"USER and "+EnvPrefix+"PASSWORD"
	}
	var u struct {
		ID       flexID `json:"id"`
		Name     string `json:"Name"`
		RealName string `json:"RealName"`
	}
	_, err := a.c.get(ctx, "find own user", "/user/"+url.PathEscape(who), nil, &u)
	switch {
	case errors.Is(err, adapters.ErrAuth):
		return fmt.Errorf("log in to RT at %s: RT refused the credentials of %s (a revoked token, a wrong password, or a disabled user): %w", a.c.base, how, err)
	case isNotFound(err) || (err == nil && u.Name == ""):
		return fmt.Errorf("log in to RT at %s: RT accepted %s but does not show the user %q as its own; with a token, set %sUSER to the token's user name", a.c.base, how, who, EnvPrefix)
	case err != nil:
		return fmt.Errorf("reach RT at %s: %w", a.c.base, err)
	}
	s.me = userRef{ID: u.Name, Name: u.Name, RealName: u.RealName}
	s.meID = int64(u.ID)
	if a.cfg.Token != "" && a.cfg.User != "" && !strings.EqualFold(a.cfg.User, u.Name) && tokenUserRE.MatchString(a.cfg.Token) {
		return fmt.Errorf("log in to RT at %s: the token belongs to the RT user %q, but %sUSER says %q", a.c.base, u.Name, EnvPrefix, a.cfg.User)
	}
	if strings.EqualFold(u.Name, "root") || strings.EqualFold(u.Name, "RT_System") {
		a.log.LogAttrs(ctx, slog.LevelWarn, "the bridge logs in to RT as a shared administrator; give it a user of its own so that its writes are told apart from the agents'",
			slog.String("op", "check"), slog.String("rt_user", u.Name))
	}
	return nil
}

func (a *Adapter) sentOn() bool { return !strings.EqualFold(a.cfg.SentField, SentFieldOff) }

// parseRef returns the RT ticket number of ref; a ref that is no ticket
// number is no ticket RT has.
func parseRef(ref adapters.Ref) (int64, error) {
	n, err := strconv.ParseInt(string(ref), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("RT ticket %q: not a ticket number: %w", string(ref), adapters.ErrNotFound)
	}
	return n, nil
}

func refOf(id int64) adapters.Ref { return adapters.Ref(strconv.FormatInt(id, 10)) }

// getTicket reads one ticket; a ticket RT does not have (or does not show
// the bridge) is [adapters.ErrNotFound].
func (a *Adapter) getTicket(ctx context.Context, op string, id int64) (rtTicket, error) {
	var t rtTicket
	_, err := a.c.get(ctx, op, fmt.Sprintf("/ticket/%d", id), nil, &t)
	if err != nil {
		return rtTicket{}, fmt.Errorf("read RT ticket %d: %w", id, err)
	}
	if t.ID == 0 {
		return rtTicket{}, fmt.Errorf("read RT ticket %d: %w", id, adapters.ErrNotFound)
	}
	return t, nil
}

// findTickets returns the tickets whose ID field holds upstreamID, oldest
// first. RT leaves deleted tickets out of every search (REST2 gives no way
// to ask for them), so a deleted ticket is not found.
func (a *Adapter) findTickets(ctx context.Context, upstreamID string) ([]rtTicket, error) {
	q := url.Values{
		"query":    {fmt.Sprintf("'CF.{%s}' = %s", a.cfg.IDField, ticketSQLQuote(upstreamID))},
		"fields":   {"Status,Created,CustomFields"},
		"orderby":  {"id"},
		"order":    {"ASC"},
		"per_page": {strconv.Itoa(perPage)},
	}
	var p page[rtTicket]
	if _, err := a.c.get(ctx, "lookup", "/tickets", q, &p); err != nil {
		return nil, fmt.Errorf("search RT for guest request %s: %w", upstreamID, err)
	}
	for _, t := range p.Items {
		a.remember(int64(t.ID), upstreamID)
	}
	return p.Items, nil
}

func (a *Adapter) remember(ticket int64, upstreamID string) {
	a.mu.Lock()
	a.tickets[ticket] = upstreamID
	a.mu.Unlock()
}

// EnsureTicket returns the RT ticket of t.UpstreamID, creating it in the
// department's queue, with the custom field set, when none exists.
func (a *Adapter) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if err := checkID("upstream ticket id", t.UpstreamID); err != nil {
		return "", fmt.Errorf("ensure RT ticket: %w", err)
	}
	if t.Status != "" && !t.Status.Known() {
		return "", fmt.Errorf("ensure RT ticket for %s: status %q is not one of the API's: %w", t.UpstreamID, t.Status, adapters.ErrInvalid)
	}
	s, err := a.ready(ctx)
	if err != nil {
		return "", err
	}
	found, err := a.findTickets(ctx, t.UpstreamID)
	if err != nil {
		return "", fmt.Errorf("ensure RT ticket: %w", err)
	}
	if len(found) > 0 {
		id, err := a.oneTicket(ctx, t.UpstreamID, found)
		return refOf(id), err
	}
	queue := a.queueFor(t.Department)
	st := ""
	if t.Status != "" {
		st = a.status.Down(t.Status)
	}
	id, err := a.create(ctx, s, t, queue, st)
	if err != nil {
		return "", err
	}
	a.remember(id, t.UpstreamID)
	a.log.LogAttrs(ctx, slog.LevelInfo, "created RT ticket", slog.String("ticket", t.UpstreamID),
		slog.String("op", "ensure"), slog.Int64("rt_ticket", id), slog.String("queue", queue))
	// A bridge killed while RT was creating a ticket leaves that create
	// running in RT; the restarted bridge may have searched before it
	// finished and made a second ticket. Look again.
	if found, err = a.findTickets(ctx, t.UpstreamID); err == nil && len(found) > 1 {
		id, err = a.oneTicket(ctx, t.UpstreamID, found)
		if err != nil {
			return "", err
		}
	}
	return refOf(id), nil
}

// oneTicket returns the ticket of found that mirrors upstreamID and merges
// any others into it (RT's way with duplicates): the one holding the most
// mirrored messages, the oldest of those. Merging keeps every transaction,
// and RT shows a merged ticket's history in the one it was merged into, so
// the markers of both count from then on. Duplicates arise only when a
// bridge is killed while RT creates a ticket (see EnsureTicket).
func (a *Adapter) oneTicket(ctx context.Context, upstreamID string, found []rtTicket) (int64, error) {
	if len(found) == 1 {
		return int64(found[0].ID), nil
	}
	best, most := int64(0), -1
	for _, t := range found { // oldest first
		held, _, err := a.markers(ctx, int64(t.ID), 0)
		if err != nil {
			return 0, fmt.Errorf("choose among the RT tickets of guest request %s: %w", upstreamID, err)
		}
		if len(held) > most {
			best, most = int64(t.ID), len(held)
		}
	}
	for _, t := range found {
		dup := int64(t.ID)
		if dup == best {
			continue
		}
		resp, err := a.c.call(ctx, "merge duplicate", http.MethodPut, fmt.Sprintf("/ticket/%d", dup), nil, map[string]any{"MergeInto": best}, nil, true)
		if err != nil {
			return 0, fmt.Errorf("merge RT ticket %d into %d, two tickets of guest request %s: %w", dup, best, upstreamID, err)
		}
		a.log.LogAttrs(ctx, slog.LevelWarn, "merged a duplicate RT ticket of a guest request (the bridge was stopped while RT created it)",
			slog.String("ticket", upstreamID), slog.String("op", "merge"), slog.Int64("rt_ticket", best),
			slog.Int64("duplicate", dup), slog.String("rt_said", strings.Join(messages(resp), "; ")))
	}
	return best, nil
}

// create makes the ticket. RT lets a lifecycle restrict the statuses a new
// ticket may have (the default one allows new, open and resolved); when it
// refuses the status, the ticket is created with the queue's default and
// then moved.
func (a *Adapter) create(ctx context.Context, s *setup, t adapters.Ticket, queue, status string) (int64, error) {
	body := map[string]any{
		"Queue":        queue,
		"Subject":      subject(t),
		"Content":      renderTicket(t),
		"ContentType":  "text/plain",
		"CustomFields": map[string]any{strconv.FormatInt(s.idCF, 10): t.UpstreamID},
	}
	if status != "" {
		body["Status"] = status
	}
	var created struct {
		ID flexID `json:"id"`
	}
	_, err := a.c.call(ctx, "create ticket", http.MethodPost, "/ticket", nil, body, &created, false)
	var herr *adapters.HTTPError
	if status != "" && errors.As(err, &herr) && herr.StatusCode == http.StatusBadRequest && strings.Contains(herr.Body, "status") {
		delete(body, "Status")
		_, err = a.c.call(ctx, "create ticket", http.MethodPost, "/ticket", nil, body, &created, false)
		if err == nil && created.ID != 0 {
			a.remember(int64(created.ID), t.UpstreamID)
			if err := a.setStatus(ctx, int64(created.ID), status); err != nil {
				return 0, err
			}
		}
	}
	if err != nil {
		return 0, fmt.Errorf("create RT ticket for %s in queue %q: %w", t.UpstreamID, queue, err)
	}
	if created.ID == 0 {
		return 0, fmt.Errorf("create RT ticket for %s in queue %q: RT answered without a ticket id", t.UpstreamID, queue)
	}
	return int64(created.ID), nil
}

// markers returns the upstream messages ticket id holds, by the marker
// line of its text/plain parts with an attachment id above after, each
// with its transaction id, and the highest attachment id read.
func (a *Adapter) markers(ctx context.Context, id, after int64) (map[string]string, int64, error) {
	out := map[string]string{}
	maxID := after
	conds := []searchCond{{Field: "ContentType", Value: "text/plain"}}
	if after > 0 {
		conds = append(conds, searchCond{Field: "id", Operator: ">", Value: after})
	}
	for pg := 1; ; pg++ {
		q := url.Values{
			"fields":   {"TransactionId,Content"},
			"orderby":  {"id"},
			"order":    {"ASC"},
			"per_page": {strconv.Itoa(perPage)},
			"page":     {strconv.Itoa(pg)},
		}
		var p page[rtAttachment]
		if _, err := a.c.call(ctx, "read markers", http.MethodPost, fmt.Sprintf("/ticket/%d/attachments", id), q, conds, &p, true); err != nil {
			return nil, 0, fmt.Errorf("read the messages of RT ticket %d: %w", id, err)
		}
		for _, at := range p.Items {
			maxID = max(maxID, int64(at.ID))
			if up, ok := parseMarker(at.Content); ok {
				if _, dup := out[up]; !dup {
					out[up] = strconv.FormatInt(int64(at.TransactionID), 10)
				}
			}
		}
		if !p.more() || len(p.Items) == 0 {
			return out, maxID, nil
		}
	}
}

// Append adds msgs to the ticket: public ones as correspondence, the
// others as comments. A message whose marker the ticket already holds is
// reported as Existed and not written again.
//
// RT's scrip "On Correspond Open Inactive Tickets" opens a new or closed
// ticket on correspondence. A new guest message on a closed ticket should
// indeed reopen it; but a new ticket stays new until an agent takes it up,
// and filling in the thread of a request that is already closed (every
// public message appended older than the RT ticket) must not reopen it.
// In those two cases Append puts the status back.
func (a *Adapter) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	for i, m := range msgs {
		if err := checkID(fmt.Sprintf("message %d: upstream message id", i+1), m.UpstreamID); err != nil {
			return nil, fmt.Errorf("append to RT ticket %s: %w", ref, err)
		}
		if strings.TrimSpace(m.Body) == "" {
			return nil, fmt.Errorf("append to RT ticket %s: message %d (%s) has an empty body: %w", ref, i+1, m.UpstreamID, adapters.ErrInvalid)
		}
	}
	id, err := parseRef(ref)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	if _, err := a.ready(ctx); err != nil {
		return nil, err
	}
	tk, err := a.getTicket(ctx, "append", id)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	have, maxAtt, err := a.markers(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	created, _ := rtTime(tk.Created)
	cur := tk.Status // as far as the adapter knows; "" once a scrip may have moved it
	out := make([]adapters.Appended, len(msgs))
	var unknown []int         // posted, but RT's answer named no transaction
	first := map[string]int{} // upstream id -> the index that posted it
	for i, m := range msgs {
		out[i] = adapters.Appended{UpstreamID: m.UpstreamID}
		if txn, ok := have[m.UpstreamID]; ok {
			out[i].HelpdeskID, out[i].Existed = txn, true
			continue
		}
		if _, ok := first[m.UpstreamID]; ok {
			out[i].Existed = true // the same message twice in one call
			continue
		}
		kind := "comment"
		body := map[string]any{"Content": renderMessage(m), "ContentType": "text/plain"}
		if m.Public {
			kind = "correspond"
			// RT's Created has a resolution of a second.
			backfill := !created.IsZero() && m.CreatedAt.Before(created.Add(time.Second))
			if a.keepsStatus(cur, backfill) {
				body["Status"] = cur // set back in the same request, after RT's scrips ran
			} else {
				cur = ""
			}
		}
		resp, err := a.c.call(ctx, "append "+kind, http.MethodPost, fmt.Sprintf("/ticket/%d/%s", id, kind), nil, body, nil, false)
		if err != nil {
			return nil, fmt.Errorf("append message %s to RT ticket %d: %w", m.UpstreamID, id, err)
		}
		first[m.UpstreamID] = i
		if txn := locationID(resp, "/transaction/"); txn != "" {
			out[i].HelpdeskID = txn
		} else {
			unknown = append(unknown, i)
		}
		a.log.LogAttrs(ctx, slog.LevelDebug, "appended message", slog.String("ticket", a.upstreamOf(id)),
			slog.String("message", m.UpstreamID), slog.String("op", kind), slog.Int64("rt_ticket", id))
	}
	if len(unknown) > 0 {
		got, _, err := a.markers(ctx, id, maxAtt)
		if err != nil {
			return nil, fmt.Errorf("append: %w", err)
		}
		for _, i := range unknown {
			txn, ok := got[msgs[i].UpstreamID]
			if !ok {
				return nil, fmt.Errorf("append message %s to RT ticket %d: RT accepted it but its text lacks the marker line; check that no scrip rewrites correspondence", msgs[i].UpstreamID, id)
			}
			out[i].HelpdeskID = txn
		}
	}
	for i, m := range msgs {
		if out[i].HelpdeskID == "" {
			out[i].HelpdeskID = out[first[m.UpstreamID]].HelpdeskID
		}
	}
	return out, nil
}

// keepsStatus reports whether mirroring guest correspondence leaves a
// ticket in status was: a new ticket always, a closed one when the message
// is history being filled in.
func (a *Adapter) keepsStatus(was string, backfill bool) bool {
	up, ok := a.status.Up(was)
	switch {
	case !ok:
		return false
	case up == guestapi.StatusNew:
		return true
	case up.Closed():
		return backfill
	}
	return false
}

// locationID returns the id at the end of a 201's Location header when it
// names a record of the kind (REST2 answers a reply or comment with the
// transaction it made: /REST/2.0/transaction/<id>), "" otherwise.
func locationID(resp *adapters.HTTPResponse, kind string) string {
	if resp == nil {
		return ""
	}
	loc := resp.Header.Get("Location")
	i := strings.LastIndex(loc, kind)
	if i < 0 {
		return ""
	}
	id := loc[i+len(kind):]
	if n, err := strconv.ParseInt(id, 10, 64); err != nil || n <= 0 {
		return ""
	}
	return id
}

// SetStatus sets the RT status s maps to.
func (a *Adapter) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if !s.Known() {
		return fmt.Errorf("set status of RT ticket %s: %q is not one of the API's statuses: %w", ref, s, adapters.ErrInvalid)
	}
	target := a.status.Down(s)
	if target == "" {
		return fmt.Errorf("set status of RT ticket %s: status %q maps to no RT status: %w", ref, s, adapters.ErrInvalid)
	}
	id, err := parseRef(ref)
	if err != nil {
		return fmt.Errorf("set status: %w", err)
	}
	if _, err := a.ready(ctx); err != nil {
		return err
	}
	tk, err := a.getTicket(ctx, "set status", id)
	if err != nil {
		return fmt.Errorf("set status: %w", err)
	}
	if tk.Status == target {
		return nil
	}
	if err := a.setStatus(ctx, id, target); err != nil {
		return err
	}
	a.log.LogAttrs(ctx, slog.LevelDebug, "set status", slog.String("ticket", a.upstreamOf(id)),
		slog.String("op", "status"), slog.Int64("rt_ticket", id), slog.String("status", target))
	return nil
}

// setStatus moves ticket id to status and checks that RT did: REST2
// answers a refused change with 200 and a message.
func (a *Adapter) setStatus(ctx context.Context, id int64, status string) error {
	resp, err := a.c.call(ctx, "set status", http.MethodPut, fmt.Sprintf("/ticket/%d", id), nil, map[string]any{"Status": status}, nil, true)
	if err != nil {
		return fmt.Errorf("set status of RT ticket %d to %q: %w", id, status, err)
	}
	now, err := a.getTicket(ctx, "set status", id)
	if err != nil {
		return fmt.Errorf("set status of RT ticket %d to %q: %w", id, status, err)
	}
	if now.Status == status {
		return nil
	}
	said := strings.Join(messages(resp), "; ")
	err = fmt.Errorf("set status of RT ticket %d to %q: the ticket is still %q; RT said: %s", id, status, now.Status, said)
	if strings.Contains(said, "isn't a valid status") {
		err = fmt.Errorf("%w (the status mapping names a status this queue's lifecycle lacks): %w", err, adapters.ErrInvalid)
	}
	return err
}

// upstreamOf returns the upstream id of an RT ticket the adapter has seen,
// for the log.
func (a *Adapter) upstreamOf(id int64) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tickets[id]
}

// Lookup finds the RT ticket of upstreamID with the upstream messages it
// holds (by their markers) and the deliveries MarkSent recorded.
func (a *Adapter) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	if err := checkID("upstream ticket id", upstreamID); err != nil {
		return adapters.Found{}, false, fmt.Errorf("lookup: %w", err)
	}
	s, err := a.ready(ctx)
	if err != nil {
		return adapters.Found{}, false, err
	}
	found, err := a.findTickets(ctx, upstreamID)
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("lookup: %w", err)
	}
	if len(found) == 0 {
		return adapters.Found{}, false, nil
	}
	id, err := a.oneTicket(ctx, upstreamID, found)
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("lookup: %w", err)
	}
	var tk rtTicket
	for _, t := range found {
		if int64(t.ID) == id {
			tk = t
		}
	}
	msgs, _, err := a.markers(ctx, int64(tk.ID), 0)
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("lookup: %w", err)
	}
	f := adapters.Found{Ref: refOf(int64(tk.ID)), Messages: msgs, Sent: map[string]string{}}
	if s.sentCF != 0 {
		for _, v := range tk.values(s.sentCF) {
			if ev, up, ok := strings.Cut(v, "="); ok && ev != "" {
				f.Sent[ev] = up
			}
		}
	}
	return f, true, nil
}

// MarkSent records "<event id>=<upstream message id>" in the ticket's
// SentField (see the package doc). With the record off it does nothing.
// Calls for one ticket are serialised within the adapter; two bridges
// writing to one RT ticket are not supported.
func (a *Adapter) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	if !a.sentOn() {
		return nil
	}
	if err := checkID("event id", eventID); err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	if upstreamMessageID != "" {
		if err := checkID("upstream message id", upstreamMessageID); err != nil {
			return fmt.Errorf("mark sent: %w", err)
		}
	}
	id, err := parseRef(ref)
	if err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	s, err := a.ready(ctx)
	if err != nil {
		return err
	}
	value := eventID + "=" + upstreamMessageID
	lock := &a.sentLocks[id%int64(len(a.sentLocks))]
	lock.Lock()
	defer lock.Unlock()
	tk, err := a.getTicket(ctx, "mark sent", id)
	if err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	values := tk.values(s.sentCF)
	if slices.Contains(values, value) {
		return nil
	}
	values = append(slices.Clone(values), value)
	field := strconv.FormatInt(s.sentCF, 10)
	resp, err := a.c.call(ctx, "mark sent", http.MethodPut, fmt.Sprintf("/ticket/%d", id), nil,
		map[string]any{"CustomFields": map[string]any{field: values}}, nil, true)
	if err != nil {
		return fmt.Errorf("record delivery of event %s on RT ticket %d: %w", eventID, id, err)
	}
	now, err := a.getTicket(ctx, "mark sent", id)
	if err != nil {
		return fmt.Errorf("record delivery of event %s: %w", eventID, err)
	}
	if !slices.Contains(now.values(s.sentCF), value) {
		return fmt.Errorf("record delivery of event %s on RT ticket %d: the custom field %q did not take the value; RT said: %s",
			eventID, id, a.cfg.SentField, strings.Join(messages(resp), "; "))
	}
	return nil
}
