package statuspage

import (
	"bytes"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

//go:embed templates/*.html assets/*
var files embed.FS

// Security headers of every answer. The page has no script; styles come
// from its own stylesheet; it may not be framed.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Limits.
const (
	// FormMax bounds a POST body; the daemon's listener caps bodies at the
	// same size.
	FormMax      = 1 << 10
	pageSize     = 100
	overviewRows = 50
)

// Options configure a Server.
type Options struct {
	// Source is the hotel shown by a daemon that serves one. Exactly one
	// of Source and Hotels is set.
	Source Source
	// Hotels lists the hotels of a daemon that serves many; it is called
	// on every view and must be cheap. The page at / then lists them, and
	// each hotel's pages are under /hotels/NAME/.
	Hotels func() []Listed
	// Token is the console token; "" makes the page read-only (no sign-in,
	// no action, no message text).
	Token string
	// Logger receives the actions and refused sign-ins; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ViewRate bounds the views drawn a second, in bursts of three
	// seconds' worth; 0 means 20, below 0 no bound. A view beyond is
	// answered 429 with Retry-After.
	ViewRate float64
	// Renders bounds the views drawn at once; 0 means half the
	// processors, at least one. Waiting bounds the views that wait for
	// their turn; 0 means 16 per render. A view beyond both is answered
	// 503 with Retry-After.
	Renders, Waiting int
	// SecureCookie marks the session cookies Secure, for a page reached
	// over https through a proxy; they are Secure on a TLS connection
	// anyway.
	SecureCookie bool
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client whose failed sign-ins are counted; none by default.
	TrustedProxies []netip.Prefix
	// ExternalHost is the host (and port) people open the page at through
	// a proxy, e.g. bridge.example.com: a form sent from there is from
	// this page, also when the proxy rewrites the Host header.
	ExternalHost string
}

// Listed is one hotel of a daemon that serves many, as the list of
// hotels shows it.
type Listed struct {
	// Name names the hotel; its pages are under /hotels/Name/.
	Name string
	// Source is the hotel's bridge; nil while the hotel does not run (its
	// configuration is wrong, it could not start, or it is starting).
	Source Source
	// Ready is the hotel's readiness as the daemon's /readyz judges it,
	// and Reason says why or why not.
	Ready  bool
	Reason string
}

// Server serves the status page. Make one with New.
type Server struct {
	src    Source          // the one hotel; nil with hotels
	hotels func() []Listed // the many; nil with src
	auth   *auth
	log    *slog.Logger
	now    func() time.Time
	mux    *http.ServeMux
	pages  map[string]*template.Template
	limit  *renderLimit
	guard  *throttle // wrong tokens by client
	secure bool      // session cookies are Secure
	extern string    // the host the page is opened at through a proxy
}

// scope is the hotel a request is about and where its pages are.
type scope struct {
	src Source
	// base is the prefix of the hotel's pages: "" for a daemon's one
	// hotel, "/hotels/NAME" for one of many.
	base string
}

// New returns the page of opts.Source, or of the hotels opts.Hotels lists.
func New(opts Options) (*Server, error) {
	switch {
	case opts.Source == nil && opts.Hotels == nil:
		return nil, errors.New("status page: neither Source nor Hotels is set: say which hotel, or which hotels, the page shows")
	case opts.Source != nil && opts.Hotels != nil:
		return nil, errors.New("status page: both Source and Hotels are set: a page shows one hotel or lists many, not both")
	}
	s := &Server{src: opts.Source, hotels: opts.Hotels, log: opts.Logger, now: opts.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.auth = newAuth(opts.Token, s.now)
	s.limit = newRenderLimit(opts.ViewRate, opts.Renders, opts.Waiting)
	s.guard, s.secure = newThrottle(s.now, opts.TrustedProxies), opts.SecureCookie
	s.extern = strings.ToLower(opts.ExternalHost)
	s.pages = map[string]*template.Template{}
	for _, name := range []string{"overview", "tickets", "ticket", "login", "message", "hotels"} {
		t, err := template.New(name).Funcs(funcs(s.now)).ParseFS(files, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("status page: parse template %s: %w", name, err)
		}
		s.pages[name] = t
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /login", s.loginForm)
	m.HandleFunc("GET /assets/style.css", s.asset)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.logout)
	prefix := ""
	if s.hotels != nil {
		prefix = "/hotels/{hotel}"
		m.HandleFunc("GET /{$}", s.list)
		m.HandleFunc("GET "+prefix, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/hotels/"+url.PathEscape(r.PathValue("hotel"))+"/", http.StatusMovedPermanently)
		})
	}
	m.HandleFunc("GET "+prefix+"/{$}", s.in(s.overview))
	m.HandleFunc("GET "+prefix+"/tickets", s.in(s.tickets))
	m.HandleFunc("GET "+prefix+"/tickets/{id}", s.in(s.ticket))
	for _, a := range actions {
		m.HandleFunc("POST "+prefix+"/"+a.path, s.in(s.action(a.name)))
	}
	s.mux = m
	return s, nil
}

// actions are the POSTs on a hotel, by path under its pages.
var actions = []struct{ path, name string }{
	{"read-now", "read now"},
	{"retry", "retry"},
	{"skip", "skip"},
}

// in runs h on the hotel of r: the one hotel, or the one of many that the
// path names. An unknown hotel is a 404, one that does not run a 503.
func (s *Server) in(h func(http.ResponseWriter, *http.Request, scope)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.hotels == nil {
			h(w, r, scope{src: s.src})
			return
		}
		name := r.PathValue("hotel")
		all := s.hotels()
		for _, l := range all {
			if l.Name != name {
				continue
			}
			if l.Source == nil {
				// Its configuration failed, its start did, or it is starting.
				s.message(w, r, http.StatusServiceUnavailable, fmt.Sprintf("Hotel %s has no status page now: %s", name, l.Reason))
				return
			}
			h(w, r, scope{src: l.Source, base: "/hotels/" + url.PathEscape(name)})
			return
		}
		names := make([]string, 0, len(all))
		for _, l := range all {
			names = append(names, l.Name)
		}
		slices.Sort(names)
		list := "none"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		s.message(w, r, http.StatusNotFound, fmt.Sprintf("No hotel named %q in this daemon's hotels directory (hotels: %s).", name, list))
	}
}

// AcceptsPost reports whether r is a POST to one of the page's forms; the
// daemon's listener allows POST for those only.
func (s *Server) AcceptsPost(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	_, pattern := s.mux.Handler(r)
	return strings.HasPrefix(pattern, "POST ")
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin") // "no-referrer" makes browsers send Origin: null with forms
	h.Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, FormMax)
	if strings.HasPrefix(r.URL.Path, "/assets/") {
		s.mux.ServeHTTP(w, r) // embedded bytes: nothing to bound
		return
	}
	s.limit.serve(w, r, s.mux)
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	b, err := files.ReadFile("assets/style.css")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(b)
}

// view is what every template gets.
type view struct {
	Title string
	Hotel string
	// Base is the prefix of the hotel's pages ("" for a daemon's one
	// hotel, "/hotels/NAME" for one of many); InHotel is false on the
	// pages of no hotel (the list, sign-in, some messages).
	Base    string
	InHotel bool
	// Fleet is set when the daemon serves many hotels.
	Fleet    bool
	Actions  bool // a console token is configured
	SignedIn bool
	Who      string
	CSRF     string
	Now      time.Time
	Flash    string
	// Nav names the part of the navigation the page is: "status",
	// "tickets", "hotels" or "".
	Nav string

	Overview *overviewData
	Tickets  *ticketsData
	Ticket   *ticketData
	Message  string
	Hotels   *hotelsData
}

// view returns the view of r on the hotel p (p.src nil: of no hotel).
func (s *Server) view(r *http.Request, p scope, title string) view {
	v := view{Title: title, Base: p.base, InHotel: p.src != nil, Fleet: s.hotels != nil, Actions: s.auth.enabled(), Now: s.now()}
	if p.src != nil {
		v.Hotel = p.src.Name()
	}
	switch r.URL.Path {
	case p.base + "/":
		v.Nav = "status"
		if v.Fleet && p.src == nil {
			v.Nav = "hotels"
		}
	case p.base + "/tickets":
		v.Nav = "tickets"
	}
	if who, sess, ok := s.auth.user(r); ok {
		v.SignedIn, v.Who, v.CSRF = true, who, s.auth.csrf(sess)
	}
	v.Flash = flashText(r.URL.Query().Get("done"))
	return v
}

// flashText is the line shown after an action; only known words are shown,
// so that a link cannot put text on the page.
func flashText(done string) string {
	switch done {
	case "read now":
		return "The request is due now: the next cycle reads it."
	case "retry":
		return "The entry is pending again: the next cycle sends it, with its own Idempotency-Key."
	case "skip":
		return "The entry is abandoned: it will not be sent. It stays in the journal with your reason."
	case "login":
		return "Signed in."
	case "logout":
		return "Signed out."
	}
	return ""
}

func (s *Server) render(w http.ResponseWriter, code int, name string, v view) {
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		s.log.Error("render status page", slog.Any("error", err), slog.String("op", "console"), slog.Any("page", name))
		http.Error(w, "the page could not be rendered; see the daemon's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// message answers r with a page of one message, outside any hotel.
func (s *Server) message(w http.ResponseWriter, r *http.Request, code int, text string) {
	s.messageIn(w, r, scope{}, code, text)
}

// messageIn answers r with a page of one message about the hotel p.
func (s *Server) messageIn(w http.ResponseWriter, r *http.Request, p scope, code int, text string) {
	if _, isCLI := bearer(r); isCLI {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		fmt.Fprintln(w, text)
		return
	}
	v := s.view(r, p, http.StatusText(code))
	v.Message = text
	s.render(w, code, "message", v)
}

// overviewData is the front page.
type overviewData struct {
	Status      sync.Status
	Chart       template.HTML
	Cycles      int
	ByOutcome   map[string]int
	Requests    int
	MeanTook    time.Duration
	Propagation []propRow
	Failing     []sync.TicketStatus
	FailingN    int
	Pending     []sync.EntryStatus
	Waiting     int // pending entries backing off
	Oldest      time.Time
	Failed      []sync.EntryStatus
}

type propRow struct {
	Label         string
	Count         uint64
	P50, P90, P99 string
	Chart         template.HTML
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request, p scope) {
	snap := p.src.Snapshot()
	now := s.now()
	st := snap.Status
	d := &overviewData{Status: st, ByOutcome: map[string]int{}}
	d.Chart = cycleChart(snap.Cycles, now, time.Hour)
	var prop sync.Propagation
	var took time.Duration
	for _, c := range snap.Cycles {
		if c.Start.Before(now.Add(-time.Hour)) {
			continue
		}
		d.Cycles++
		d.ByOutcome[c.Outcome]++
		d.Requests += c.APIRequests
		took += c.Duration
		prop.ToHelpdesk.Merge(c.Propagation.ToHelpdesk)
		prop.ToGuest.Merge(c.Propagation.ToGuest)
	}
	if d.Cycles > 0 {
		d.MeanTook = took / time.Duration(d.Cycles)
	}
	for _, p := range []struct {
		label string
		h     sync.Histogram
	}{{"Guest → helpdesk", prop.ToHelpdesk}, {"Agent → guest", prop.ToGuest}} {
		d.Propagation = append(d.Propagation, propRow{Label: p.label, Count: p.h.Count(),
			P50: quantile(p.h, 0.5), P90: quantile(p.h, 0.9), P99: quantile(p.h, 0.99), Chart: histChart(p.h, p.label)})
	}
	for _, t := range st.Tickets {
		if t.LastError == "" && t.Attempts == 0 {
			continue
		}
		d.FailingN++
		if len(d.Failing) < overviewRows {
			d.Failing = append(d.Failing, t)
		}
	}
	for _, e := range st.Pending {
		if e.NextAttempt.After(now) {
			d.Waiting++
		}
		if d.Oldest.IsZero() || (!e.CreatedAt.IsZero() && e.CreatedAt.Before(d.Oldest)) {
			d.Oldest = e.CreatedAt
		}
	}
	d.Pending = st.Pending[:min(len(st.Pending), overviewRows)]
	d.Failed = st.Failed[:min(len(st.Failed), 2*overviewRows)]
	v := s.view(r, p, "Status")
	v.Overview = d
	s.render(w, http.StatusOK, "overview", v)
}

func quantile(h sync.Histogram, q float64) string {
	b, ok := h.Quantile(q)
	switch {
	case h.Count() == 0:
		return "–"
	case !ok:
		return "> " + shortDur(b)
	}
	return "≤ " + shortDur(b)
}

// ticketsData is the searchable table.
type ticketsData struct {
	Q            string
	Errors       bool
	Rows         []sync.TicketStatus
	Total        int
	Matched      int
	Page, Pages  int
	Prev, Next   string
	First, Last  int
	SnapshotTime time.Time
}

func (s *Server) tickets(w http.ResponseWriter, r *http.Request, p scope) {
	snap := p.src.Snapshot()
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > 200 {
		q = q[:200]
	}
	onlyErrors := r.URL.Query().Get("errors") != ""
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	lq := strings.ToLower(q)
	var rows []sync.TicketStatus
	matched := 0
	first := (page - 1) * pageSize
	for _, t := range snap.Status.Tickets {
		if onlyErrors && t.LastError == "" && t.Attempts == 0 {
			continue
		}
		if lq != "" && !matches(t, lq) {
			continue
		}
		if matched >= first && len(rows) < pageSize {
			rows = append(rows, t)
		}
		matched++
	}
	d := &ticketsData{Q: q, Errors: onlyErrors, Rows: rows, Total: len(snap.Status.Tickets), Matched: matched,
		Page: page, Pages: max(1, (matched+pageSize-1)/pageSize), First: first + 1, Last: first + len(rows), SnapshotTime: snap.Status.At}
	link := func(n int) string {
		v := url.Values{}
		if q != "" {
			v.Set("q", q)
		}
		if onlyErrors {
			v.Set("errors", "1")
		}
		v.Set("page", strconv.Itoa(n))
		return p.base + "/tickets?" + v.Encode()
	}
	if page > 1 {
		d.Prev = link(page - 1)
	}
	if page < d.Pages {
		d.Next = link(page + 1)
	}
	v := s.view(r, p, "Requests")
	v.Tickets = d
	s.render(w, http.StatusOK, "tickets", v)
}

func matches(t sync.TicketStatus, lq string) bool {
	for _, f := range []string{t.ID, t.Ref, t.Department, t.UpstreamStatus, t.HelpdeskStatus, t.DueReason, t.LastError} {
		if strings.Contains(strings.ToLower(f), lq) {
			return true
		}
	}
	return false
}

// ticketData is one request's page.
type ticketData struct {
	D        sync.TicketDetail
	Due      string
	Why      string
	Mirrored [][2]string
	Own      [][2]string
	Journal  []journalRow
}

type journalRow struct {
	sync.EntryStatus
	Payload  *state.Payload // nil unless signed in
	CanRetry bool
	CanSkip  bool
}

func (s *Server) ticket(w http.ResponseWriter, r *http.Request, p scope) {
	d, err := p.src.Ticket(r.PathValue("id"))
	if err != nil {
		s.messageIn(w, r, p, http.StatusNotFound, err.Error())
		return
	}
	v := s.view(r, p, "Request "+short(d.ID))
	td := &ticketData{D: d, Due: dueText(d.TicketStatus, v.Now), Why: sync.DueReasonText(d.DueReason)}
	td.Mirrored = sortedPairs(d.MirroredMessages)
	td.Own = sortedPairs(d.OwnMessages)
	var payloads map[string]state.Payload
	if v.SignedIn {
		if payloads, err = p.src.Payloads(d.ID); err != nil {
			s.log.Warn("read journal payloads", slog.Any("error", err), slog.String("op", "console"), slog.Any("ticket", d.ID))
		}
	}
	for _, e := range d.Journal {
		row := journalRow{EntryStatus: e, CanRetry: e.State != string(state.Sent), CanSkip: e.State == string(state.Pending) || e.State == string(state.Failed)}
		if p, ok := payloads[e.EventID]; ok {
			row.Payload = &p
		}
		td.Journal = append(td.Journal, row)
	}
	v.Ticket = td
	s.render(w, http.StatusOK, "ticket", v)
}

func sortedPairs(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for k, v := range m {
		out = append(out, [2]string{k, v})
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	if !s.auth.enabled() {
		s.message(w, r, http.StatusNotFound, "Sign-in is off: the daemon has no console token (TICKETBRIDGE_CONSOLE_TOKEN_FILE). The page is read-only.")
		return
	}
	// The sign-in form carries a CSRF token too, bound to a short-lived
	// cookie of its own (there is no session yet).
	pre := rand.Text()
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: pre, Path: "/login", MaxAge: int(loginLife / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure || r.TLS != nil})
	v := s.view(r, scope{}, "Sign in")
	v.CSRF = s.auth.csrf("login:" + pre)
	s.render(w, http.StatusOK, "login", v)
}

// sameOrigin refuses a browser POST sent from another site: its Origin
// header, when there is one, must name this host, or the host the page is
// opened at through a proxy (Options.ExternalHost).
func (s *Server) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser, or an old one: the CSRF token still decides
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Host)
	return host == strings.ToLower(r.Host) || (s.extern != "" && host == s.extern)
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.auth.enabled() {
		s.message(w, r, http.StatusNotFound, "Sign-in is off: the daemon has no console token (TICKETBRIDGE_CONSOLE_TOKEN_FILE).")
		return
	}
	if !s.sameOrigin(r) {
		s.message(w, r, http.StatusForbidden, "Refused: the form was sent from another site.")
		return
	}
	if err := r.ParseForm(); err != nil {
		s.message(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("The form is larger than %d bytes.", FormMax))
		return
	}
	if c, err := r.Cookie(loginCookie); err != nil || !s.auth.checkCSRF("login:"+c.Value, r.PostForm.Get("csrf")) {
		s.message(w, r, http.StatusForbidden, "Refused: the sign-in form's CSRF token is missing or stale; open the sign-in page again.")
		return
	}
	client := s.guard.client(r)
	if s.guard.locked(client) {
		s.message(w, r, http.StatusTooManyRequests, tooManyText)
		return
	}
	who, err := cleanName(r.PostForm.Get("name"))
	if err != nil {
		s.message(w, r, http.StatusBadRequest, "Sign-in refused: "+err.Error()+".")
		return
	}
	if !s.auth.checkToken(r.PostForm.Get("token")) {
		s.guard.failed(client)
		s.log.Warn("console sign-in refused: wrong token", slog.String("op", "console"), slog.Any("who", who), slog.Any("remote", r.RemoteAddr), slog.String("client", client))
		s.message(w, r, http.StatusForbidden, "Sign-in refused: the token is wrong.")
		return
	}
	value, expires := s.auth.session(who)
	// Max-Age, not Expires: the browser counts the session's life on its
	// own clock, so that a clock of the daemon's that differs from it
	// neither drops the cookie at once nor keeps it past the session (the
	// daemon checks the expiry in the value itself).
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/", MaxAge: int(expires.Sub(s.now()) / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure || r.TLS != nil})
	s.log.Info("console sign-in", slog.String("op", "console"), slog.Any("who", who), slog.Any("remote", r.RemoteAddr))
	http.Redirect(w, r, "/?done=login", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	who, sess, ok := s.auth.user(r)
	if ok {
		if err := r.ParseForm(); err != nil || !s.sameOrigin(r) || !s.auth.checkCSRF(sess, r.PostForm.Get("csrf")) {
			s.message(w, r, http.StatusForbidden, "Refused: the form's CSRF token is missing or stale; reload the page.")
			return
		}
		s.log.Info("console sign-out", slog.String("op", "console"), slog.Any("who", who), slog.Any("remote", r.RemoteAddr))
		s.auth.end(sess)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure || r.TLS != nil})
	http.Redirect(w, r, "/?done=logout", http.StatusSeeOther)
}

// actor returns who makes the POST r: a signed-in user whose form carries
// the CSRF token, or a client with the token as bearer credential (the
// CLI, which names its user in the Ticketbridge-Operator header). It
// writes the refusal itself and returns ok false.
func (s *Server) actor(w http.ResponseWriter, r *http.Request) (who string, ok bool) {
	if !s.auth.enabled() {
		s.message(w, r, http.StatusForbidden, "Actions are off: the daemon has no console token (TICKETBRIDGE_CONSOLE_TOKEN_FILE).")
		return "", false
	}
	if err := r.ParseForm(); err != nil {
		s.message(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("The form is larger than %d bytes: shorten the reason.", FormMax))
		return "", false
	}
	if tok, isBearer := bearer(r); isBearer {
		client := s.guard.client(r)
		if s.guard.locked(client) {
			s.message(w, r, http.StatusTooManyRequests, tooManyText)
			return "", false
		}
		if !s.auth.checkToken(tok) {
			s.guard.failed(client)
			s.log.Warn("console action refused: wrong token", slog.String("op", "console"), slog.Any("remote", r.RemoteAddr), slog.String("client", client))
			s.message(w, r, http.StatusForbidden, "Refused: the console token is wrong.")
			return "", false
		}
		name, err := cleanName(r.Header.Get("Ticketbridge-Operator"))
		if err != nil || name == "console" {
			name = "cli"
		} else {
			name = "cli:" + name
		}
		return name, true
	}
	who, sess, signed := s.auth.user(r)
	switch {
	case !signed:
		s.message(w, r, http.StatusForbidden, "Sign in first: actions need the console token.")
		return "", false
	case !s.sameOrigin(r) || !s.auth.checkCSRF(sess, r.PostForm.Get("csrf")):
		s.log.Warn("console action refused: bad CSRF token or origin", slog.String("op", "console"), slog.Any("who", who), slog.Any("remote", r.RemoteAddr))
		s.message(w, r, http.StatusForbidden, "Refused: the form's CSRF token is missing or stale; reload the page and try again.")
		return "", false
	}
	return who, true
}

// action handles the POST of one action on ?id=: read now (a ticket),
// retry (an entry; a ticket id reads the ticket now) or skip (an entry,
// with the form's reason).
func (s *Server) action(name string) func(http.ResponseWriter, *http.Request, scope) {
	return func(w http.ResponseWriter, r *http.Request, p scope) {
		who, ok := s.actor(w, r)
		if !ok {
			return
		}
		id := r.URL.Query().Get("id")
		if id == "" {
			s.messageIn(w, r, p, http.StatusBadRequest, "No id: say which request or entry (?id=).")
			return
		}
		var (
			ticket, event, reason string
			err                   error
			done                  = name
		)
		switch name {
		case "read now":
			var t state.Ticket
			if t, err = p.src.ReadNow(id); err == nil {
				ticket = t.ID
			}
		case "retry":
			var e state.Entry
			if e, err = p.src.Retry(id); err == nil {
				ticket, event = e.TicketID, e.EventID
			} else if errors.Is(err, sync.ErrNoSuchEntry) {
				var t state.Ticket
				if t, err = p.src.ReadNow(id); err == nil {
					ticket, done = t.ID, "read now"
				} else if errors.Is(err, sync.ErrNoSuchTicket) {
					err = fmt.Errorf("%w: no journal entry and no tracked ticket has the id %q", sync.ErrNoSuchTicket, id)
				}
			}
		case "skip":
			reason = r.PostForm.Get("reason")
			var e state.Entry
			if e, err = p.src.Skip(id, who, reason); err == nil {
				ticket, event = e.TicketID, e.EventID
			}
		}
		attrs := []any{"op", "console", "action", done, "who", who, "remote", r.RemoteAddr}
		if h := p.src.Name(); h != "" {
			attrs = append(attrs, "hotel", h)
		}
		if ticket != "" {
			attrs = append(attrs, "ticket", ticket)
		}
		if event != "" {
			attrs = append(attrs, "message", event)
		}
		if reason != "" {
			attrs = append(attrs, "reason", reason)
		}
		if err != nil {
			s.log.Warn("console action failed", append(attrs, "id", id, slog.Any("error", err))...)
			code := http.StatusBadRequest
			switch {
			case errors.Is(err, sync.ErrNoSuchEntry), errors.Is(err, sync.ErrNoSuchTicket):
				code = http.StatusNotFound
			case errors.Is(err, sync.ErrNotActionable):
				code = http.StatusConflict
			case errors.Is(err, sync.ErrBadReason), errors.Is(err, state.ErrInvalid):
			default:
				code = http.StatusInternalServerError
			}
			s.messageIn(w, r, p, code, "Not done: "+err.Error())
			return
		}
		s.log.Info("console action", attrs...)
		if _, isCLI := bearer(r); isCLI {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			what := "ticket " + ticket
			if event != "" {
				what = "entry " + event + " of ticket " + ticket
			}
			fmt.Fprintf(w, "%s: %s. %s\n", done, what, flashText(done))
			return
		}
		http.Redirect(w, r, p.base+"/tickets/"+url.PathEscape(ticket)+"?done="+url.QueryEscape(done), http.StatusSeeOther)
	}
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// dueText says when a ticket is read next, relative to now.
func dueText(t sync.TicketStatus, now time.Time) string {
	switch {
	case t.Retired:
		return "never (retired)"
	case t.NextDue.IsZero() || !t.NextDue.After(now):
		return "next cycle"
	}
	return "in " + t.NextDue.Sub(now).Round(time.Second).String()
}

func funcs(now func() time.Time) template.FuncMap {
	return template.FuncMap{
		"short": short,
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "–"
			}
			return t.Local().Format(time.DateTime)
		},
		"ago": func(t time.Time) string {
			if t.IsZero() {
				return "–"
			}
			d := now().Sub(t)
			if d < 0 {
				return "in " + (-d).Round(time.Second).String()
			}
			return d.Round(time.Second).String() + " ago"
		},
		"dur": roundDur,
		"due": func(t sync.TicketStatus) string { return dueText(t, now()) },
		"dash": func(s string) string {
			if s == "" {
				return "–"
			}
			return s
		},
		"future": func(t time.Time) bool { return t.After(now()) },
	}
}
