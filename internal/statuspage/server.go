package statuspage

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

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
	// Hotels lists the daemon's hotels; it is called on every view and
	// must be cheap. The page at / lists them, and each hotel's pages are
	// under /hotels/NAME/ (but see One).
	Hotels func() []Listed
	// One shows the one hotel Hotels lists (a daemon of one hotel, run as
	// a fleet of one) where the page of one hotel is: at /, with no list
	// of hotels. While it does not run, its pages say why.
	One bool
	// Token is the console token; "" makes the page read-only (no sign-in,
	// no action, no message text).
	Token string
	// Logger receives the actions and refused sign-ins; nil discards.
	Logger *slog.Logger
	// ViewRate bounds the views drawn a second, in bursts of three
	// seconds' worth, a quarter of them for one client; 0 means 20, below
	// 0 no bound. A view beyond is answered 429 with Retry-After. Views
	// with a valid session are not counted, and the sign-in form,
	// sign-ins and actions have a budget of their own.
	ViewRate float64
	// Renders bounds the views drawn at once; 0 means half the
	// processors, at least one. Waiting bounds the views without a valid
	// credential that wait for their turn; 0 means 16 per render. A view
	// beyond both is answered 503 with Retry-After.
	Renders, Waiting int
	// SecureCookie marks the session cookies Secure, for a page reached
	// over https through a proxy; they are Secure on a TLS connection
	// anyway.
	SecureCookie bool
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client, whose wrong tokens are counted and whose share of views
	// and sign-ins is taken; none by default.
	TrustedProxies []netip.Prefix
	// ExternalHost is the host (and port) people open the page at through
	// a proxy, e.g. bridge.example.com: a form sent from there is from
	// this page, also when the proxy rewrites the Host header; and the
	// page answers for it (hosts.go).
	ExternalHost string
	// Listen is the address the page listens on, host:port: the page
	// answers for its host, and listening on every address (0.0.0.0, ::
	// or no host) for any IP address too. Requests for any other host
	// than these, the loopback names and AllowedHosts are refused 421,
	// against DNS rebinding (hosts.go).
	Listen string
	// AllowedHosts are more host names or addresses the page answers
	// for (TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS), without port.
	AllowedHosts []string
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
	hotels func() []Listed
	one    bool // hotels lists one hotel, shown at /
	auth   *auth
	log    *slog.Logger
	mux    *http.ServeMux
	pages  map[string]*template.Template
	limit  *renderLimit
	guard  *throttle // wrong tokens by client
	secure bool      // session cookies are Secure
	extern string    // the host the page is opened at through a proxy
	hosts  hostCheck // the hosts the page answers for
}

// scope is the hotel a request is about and where its pages are.
type scope struct {
	src Source
	// base is the prefix of the hotel's pages: "" for a daemon's one
	// hotel, "/hotels/NAME" for one of many.
	base string
}

// New returns the page of the hotels opts.Hotels lists.
func New(opts Options) (*Server, error) {
	if opts.Hotels == nil {
		return nil, errors.New("status page: Hotels is not set: say which hotels the page shows")
	}
	s := &Server{hotels: opts.Hotels, one: opts.One, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.auth = newAuth(opts.Token)
	s.limit = newRenderLimit(opts.ViewRate, opts.Renders, opts.Waiting)
	s.guard, s.secure = newThrottle(opts.TrustedProxies), opts.SecureCookie
	s.extern = strings.ToLower(opts.ExternalHost)
	s.hosts = newHostCheck(opts.Listen, opts.ExternalHost, opts.AllowedHosts)
	s.pages = map[string]*template.Template{}
	for _, name := range []string{"overview", "tickets", "ticket", "login", "message", "hotels"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+name+".html")
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
	if !s.one {
		prefix = "/hotels/{hotel}"
		m.HandleFunc("GET /{$}", s.list)
		m.HandleFunc("GET "+prefix, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/hotels/"+url.PathEscape(r.PathValue("hotel"))+"/", http.StatusMovedPermanently)
		})
	}
	m.HandleFunc("GET "+prefix+"/{$}", s.in(s.overview))
	m.HandleFunc("GET "+prefix+"/tickets", s.in(s.tickets))
	m.HandleFunc("GET "+prefix+"/tickets/{id}", s.in(s.ticket))
	m.HandleFunc("GET "+prefix+"/tickets/{id}/audit", s.in(s.auditLines))
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
	{"pause", "pause"},
	{"resume", "resume"},
	{"resync", "resync"},
	{"unlink", "unlink"},
	{"connect", "connect"},
}

// in runs h on the hotel of r: the one hotel (One), or the one of many
// that the path names. An unknown hotel is a 404, one that does not run a
// 503.
func (s *Server) in(h func(http.ResponseWriter, *http.Request, scope)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.one {
			reason := "it is starting"
			for _, l := range s.hotels() {
				if l.Source != nil {
					h(w, r, scope{src: l.Source})
					return
				}
				reason = l.Reason
			}
			s.message(w, r, http.StatusServiceUnavailable, "The hotel has no status page now: "+reason)
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
	if !s.hosts.allows(r.Host) {
		refuseHost(w, r.Host)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/assets/") || (r.Method == http.MethodGet && r.URL.Path == "/login") {
		// Embedded bytes, and the sign-in form (a template and a CSRF
		// cookie): each costs what a refusal would. Bounding the form
		// would let anyone on the operators' address (on loopback, any
		// local user) keep them from signing in.
		s.mux.ServeHTTP(w, r)
		return
	}
	s.limit.serve(w, r, s.mux, s.kind(r), s.guard.client(r))
}

// kind says how r is bounded (limit.go): credentialed when it carries a
// valid credential, a live session or the console token, as bearer
// credential or in the sign-in form; else a view or a sign-in. The token
// is compared in constant time, and a wrong one is left to the handler to
// count against its client. It parses the sign-in form to see its token.
func (s *Server) kind(r *http.Request) kind {
	if s.auth.enabled() {
		if tok, ok := bearer(r); ok {
			if s.auth.checkToken(tok) {
				return credentialed
			}
		} else if _, _, ok := s.auth.user(r); ok {
			return credentialed
		} else if r.Method == http.MethodPost && r.URL.Path == "/login" {
			if err := r.ParseForm(); err != nil {
				// Parsed again by the handler, which answers the error:
				// a body past its bound fails that read the same way
				// (http.MaxBytesReader's error stays).
				r.PostForm, r.Form = nil, nil
				return signingIn
			}
			if s.auth.checkToken(r.PostForm.Get("token")) {
				return credentialed
			}
		}
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path != "/login" {
		return viewing
	}
	return signingIn
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
	v := view{Title: title, Base: p.base, InHotel: p.src != nil, Fleet: !s.one, Actions: s.auth.enabled(), Now: time.Now()}
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

// flashText is the line shown after an action (see [sync.Answer]) or a
// sign-in; only known words are shown, so that a link cannot put text on
// the page.
func flashText(done string) string {
	switch done {
	case "login":
		return "Signed in."
	case "logout":
		return "Signed out."
	}
	return sync.Answer(done, -1)
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

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// funcs are the templates' functions; "ago", "due" and "future" read the
// runtime's clock (time.Now), which a test moves in a testing/synctest
// bubble.
var funcs = template.FuncMap{
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
		d := time.Since(t)
		if d < 0 {
			return "in " + (-d).Round(time.Second).String()
		}
		return d.Round(time.Second).String() + " ago"
	},
	"dur": roundDur,
	"due": func(t sync.TicketStatus) string { return t.DueText(time.Now()) },
	"dash": func(s string) string {
		if s == "" {
			return "–"
		}
		return s
	},
	"future": func(t time.Time) bool { return t.After(time.Now()) },
	// plural is n with the noun, in the singular for one.
	"plural": func(n any, one, many string) string {
		if fmt.Sprint(n) == "1" {
			return "1 " + one
		}
		return fmt.Sprint(n) + " " + many
	},
	// why says in words why a request is read when it is.
	"why": sync.DueReasonText,
}
