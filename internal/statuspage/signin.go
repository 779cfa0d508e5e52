package statuspage

// Sign-in, sign-out and the actions a signed-in user (or the CLI, with the
// token) may take.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

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
	who, err := cleanName(r.PostForm.Get("name"))
	if err != nil {
		s.message(w, r, http.StatusBadRequest, "Sign-in refused: "+err.Error()+".")
		return
	}
	// The right token signs in, also from a client with too many wrong
	// ones: on loopback every local user is the same client.
	if !s.auth.checkToken(r.PostForm.Get("token")) {
		client := s.guard.client(r)
		if !s.guard.wrong(client) {
			s.message(w, r, http.StatusTooManyRequests, tooManyText)
			return
		}
		s.log.Warn("console sign-in refused: wrong token", slog.String("op", "console"), slog.Any("who", who), slog.Any("remote", r.RemoteAddr), slog.String("client", client))
		s.message(w, r, http.StatusForbidden, "Sign-in refused: the token is wrong.")
		return
	}
	value, expires := s.auth.session(who)
	// Max-Age, not Expires: the browser counts the session's life on its
	// own clock, so that a clock of the daemon's that differs from it
	// neither drops the cookie at once nor keeps it past the session (the
	// daemon checks the expiry in the value itself).
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/", MaxAge: int(time.Until(expires) / time.Second),
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
		// The right token acts, also from a client with too many wrong
		// ones.
		if !s.auth.checkToken(tok) {
			client := s.guard.client(r)
			if !s.guard.wrong(client) {
				s.message(w, r, http.StatusTooManyRequests, tooManyText)
				return "", false
			}
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
// retry (an entry; a ticket id reads the ticket now), skip (an entry,
// with the form's reason), or a command on a request (pause, resume,
// resync: sync.Apply, with who).
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
			ticket, event, reason, ref string
			err                        error
			done                       = name
		)
		switch name {
		case "read now":
			var t state.Ticket
			if t, err = p.src.ReadNow(id, who); err == nil {
				ticket = t.ID
			}
		case "retry":
			var e state.Entry
			if e, err = p.src.Retry(id, who); err == nil {
				ticket, event = e.TicketID, e.EventID
			} else if errors.Is(err, sync.ErrNoSuchEntry) {
				var t state.Ticket
				if t, err = p.src.ReadNow(id, who); err == nil {
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
		default:
			var d sync.Done
			c := sync.Command{Name: name, Ticket: id, Who: who}
			if name == sync.CommandConnect {
				c.Ref = r.PostForm.Get(argField(name))
				ref = c.Ref
			}
			if d, err = p.src.Command(c); err == nil {
				ticket = d.Ticket.ID
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
		if ref != "" && err == nil { // checked by Command: one line, bounded
			attrs = append(attrs, "ref", ref)
		}
		if err != nil {
			s.log.Warn("console action failed", append(attrs, "id", id, slog.Any("error", err))...)
			code := http.StatusBadRequest
			switch {
			case errors.Is(err, sync.ErrNoSuchEntry), errors.Is(err, sync.ErrNoSuchTicket):
				code = http.StatusNotFound
			case errors.Is(err, sync.ErrNotActionable):
				code = http.StatusConflict
			case errors.Is(err, sync.ErrBadReason), errors.Is(err, sync.ErrBadRef), errors.Is(err, state.ErrInvalid), errors.Is(err, sync.ErrUnknownCommand):
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
