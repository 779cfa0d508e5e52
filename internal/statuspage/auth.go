package statuspage

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	gosync "sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// MinTokenLen is the shortest console token accepted, in bytes: 32
// bytes of hex or base64 (openssl rand -hex 32 makes 64) are out of
// reach of guessing at any pace the daemon answers. It is the token's
// defence: the right token is never refused, so counting wrong ones
// (throttle.go) cannot keep a guesser from learning which one is right.
const MinTokenLen = 32

// minTokenRunes is the fewest different characters a console token must
// hold: a random token of 32 hex digits holds about 14, while a word
// written over and over ("hotelhotel…") holds a handful and is guessed
// whatever its length.
const minTokenRunes = 10

// Session cookie.
const (
	cookieName  = "ticketbridge_console"
	sessionLife = 12 * time.Hour
	loginCookie = "ticketbridge_login" // binds the sign-in form's CSRF token
	loginLife   = 30 * time.Minute
	maxNameLen  = 64
	// maxSessions bounds the sessions kept; signing in beyond it ends the
	// session that expires first.
	maxSessions = 1024
)

// CheckToken says what is wrong with a console token (already trimmed of
// surrounding white space): empty, shorter than MinTokenLen bytes, not
// one word of UTF-8, or a few characters repeated. The error never contains the token.
func CheckToken(tok string) error {
	switch {
	case tok == "":
		return errors.New("the console token is empty")
	case len(tok) < MinTokenLen:
		return fmt.Errorf("the console token is %d bytes long; want %d or more (e.g. openssl rand -hex 32)", len(tok), MinTokenLen)
	case strings.ContainsFunc(tok, unicode.IsSpace) || !utf8.ValidString(tok):
		return errors.New("the console token contains white space or is not UTF-8; want one word")
	case distinctRunes(tok) < minTokenRunes:
		return fmt.Errorf("the console token repeats a few characters (fewer than %d different characters): it is easy to guess; make a random one (e.g. openssl rand -hex 32)", minTokenRunes)
	}
	return nil
}

// distinctRunes counts the different characters of s.
func distinctRunes(s string) int {
	seen := map[rune]bool{}
	for _, r := range s {
		seen[r] = true
	}
	return len(seen)
}

// auth checks the console token and the sessions made from it. The zero
// value (no token) refuses everything.
//
// Sessions are kept in memory: a cookie is good while its session is in
// sessions, so that signing out ends it at once, and a restart (which is
// how a new token is taken) ends every one.
type auth struct {
	token   string
	sum     [32]byte // sha256 of the token: compared in constant time
	signKey []byte   // HMAC key of sessions and CSRF tokens, derived from the token

	mu       gosync.Mutex
	sessions map[string]time.Time // live session ids → their expiry
}

func newAuth(token string) *auth {
	a := &auth{token: token, sessions: map[string]time.Time{}}
	if token != "" {
		a.sum = sha256.Sum256([]byte(token))
		m := hmac.New(sha256.New, []byte(token))
		m.Write([]byte("ticketbridge console session key"))
		a.signKey = m.Sum(nil)
	}
	return a
}

func (a *auth) enabled() bool { return a.token != "" }

// checkToken compares given with the token in constant time.
func (a *auth) checkToken(given string) bool {
	if !a.enabled() {
		return false
	}
	g := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(g[:], a.sum[:]) == 1
}

func (a *auth) mac(parts ...string) string {
	m := hmac.New(sha256.New, a.signKey)
	for _, p := range parts {
		fmt.Fprintf(m, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// session starts a session of who and returns its cookie value: name,
// expiry, session id and their MAC.
func (a *auth) session(who string) (value string, expires time.Time) {
	now := time.Now()
	expires = now.Add(sessionLife).Truncate(time.Second)
	name := base64.RawURLEncoding.EncodeToString([]byte(who))
	exp := strconv.FormatInt(expires.Unix(), 10)
	id := rand.Text()
	a.mu.Lock()
	for sid, e := range a.sessions {
		if !now.Before(e) {
			delete(a.sessions, sid)
		}
	}
	if len(a.sessions) >= maxSessions {
		first := ""
		for sid, e := range a.sessions {
			if first == "" || e.Before(a.sessions[first]) {
				first = sid
			}
		}
		delete(a.sessions, first)
	}
	a.sessions[id] = expires
	a.mu.Unlock()
	return name + "." + exp + "." + id + "." + a.mac("session", name, exp, id), expires
}

// end ends the session of the cookie value (signing out): the cookie is
// refused from now on, also where a copy of it was kept.
func (a *auth) end(value string) {
	parts := strings.Split(value, ".")
	if len(parts) != 4 {
		return
	}
	a.mu.Lock()
	delete(a.sessions, parts[2])
	a.mu.Unlock()
}

// user returns who is signed in on r and their session's value; ok is
// false without a valid, unexpired session.
func (a *auth) user(r *http.Request) (who, value string, ok bool) {
	if !a.enabled() {
		return "", "", false
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return "", "", false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 {
		return "", "", false
	}
	want := a.mac("session", parts[0], parts[1], parts[2])
	if !hmac.Equal([]byte(want), []byte(parts[3])) {
		return "", "", false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !time.Now().Before(time.Unix(exp, 0)) {
		return "", "", false
	}
	a.mu.Lock()
	_, live := a.sessions[parts[2]]
	a.mu.Unlock()
	if !live {
		return "", "", false // signed out, or made before a restart
	}
	name, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return "", "", false
	}
	return string(name), c.Value, true
}

// csrf returns the CSRF token of a session.
func (a *auth) csrf(session string) string { return a.mac("csrf", session) }

func (a *auth) checkCSRF(session, given string) bool {
	return session != "" && hmac.Equal([]byte(a.csrf(session)), []byte(given))
}

// bearer returns the token of an Authorization: Bearer header; ok is false
// when there is none.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// cleanName checks the name a user signs in with: one line, at most
// maxNameLen characters; "" becomes "console".
func cleanName(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "console", nil
	case !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl):
		return "", errors.New("the name must be one line of text")
	case utf8.RuneCountInString(s) > maxNameLen:
		return "", fmt.Errorf("the name is longer than %d characters", maxNameLen)
	}
	return s, nil
}
