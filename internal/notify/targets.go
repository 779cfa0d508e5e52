package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"

	"github.com/ticketbridge/ticketbridge/internal/smtpsend"
)

// A Target receives notices. Its String names its kind and host only:
// the rest of its URL may be a secret.
type Target interface {
	// Send delivers one notice, retrying as internal/httpretry's policy
	// says; the error names the target by kind and host only.
	Send(ctx context.Context, n Notice) error
	// String is "kind host", e.g. "slack hooks.slack.com".
	String() string
}

// The kinds of target, the scheme of their URL before "+https://".
const (
	KindSlack   = "slack"
	KindTeams   = "teams"
	KindGChat   = "gchat"
	KindWebhook = "webhook"
	KindNtfy    = "ntfy"
	KindEmail   = "mailto"
)

// MinWebhookSecretLen is the shortest signing secret of a webhook target,
// in bytes, as the webhook helpdesk asks of its own.
const MinWebhookSecretLen = 32

// Mailer submits a mail: [smtpsend.Sender] in the daemon.
type Mailer interface {
	Send(ctx context.Context, from string, to []string, msg []byte) error
}

// Email is what an email target needs besides its recipient.
type Email struct {
	Mailer Mailer
	// From is the envelope sender and the From header.
	From string
	// MessageID, when set, makes each mail's Message-ID (without angle
	// brackets); nil means a random one at From's domain.
	MessageID func() string
}

// ParseOptions are what [ParseTargets] needs besides the list.
type ParseOptions struct {
	// Var names the setting in errors (TICKETBRIDGE_NOTIFY_URLS).
	Var string
	// HTTP sends the chat, webhook and ntfy targets' requests.
	HTTP *Poster
	// Email sends the mailto targets; nil refuses them.
	Email *Email
	// AllowInsecureHTTP accepts plain http to a host that is not loopback.
	AllowInsecureHTTP bool
}

// SplitList splits a list of target URLs at commas and white space; empty
// items are dropped. A comma inside a URL is written %2C.
func SplitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// ParseTargets reads a list of target URLs (see [SplitList]; the syntax of
// each is in docs/notifications.md). The errors name o.Var, the item's
// position and its kind and host, never the rest of a URL.
func ParseTargets(list string, o ParseOptions) ([]Target, error) {
	var out []Target
	for i, raw := range SplitList(list) {
		t, err := parseTarget(raw, o)
		if err != nil {
			return nil, fmt.Errorf("%s, item %d: %w", o.Var, i+1, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func parseTarget(raw string, o ParseOptions) (Target, error) {
	if rest, ok := strings.CutPrefix(raw, "mailto:"); ok {
		return parseEmail(rest, o)
	}
	kind, inner, ok := strings.Cut(raw, "+")
	if !ok || !strings.HasPrefix(inner, "https://") && !strings.HasPrefix(inner, "http://") {
		return nil, unknownKind(raw)
	}
	u, err := url.Parse(inner)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s target: the URL after %q does not parse as an http(s) URL with a host", kindName(kind), kind+"+")
	}
	if err := checkHTTPS(kind, u, o.AllowInsecureHTTP); err != nil {
		return nil, err
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("%s target %s: remove the #fragment", kind, u.Hostname())
	}
	if o.HTTP == nil {
		return nil, errors.New("no HTTP client for the webhook targets")
	}
	var pass string
	var hasPass bool
	var user string
	if u.User != nil {
		user = u.User.Username()
		pass, hasPass = u.User.Password()
		u.User = nil
	}
	base := httpTarget{kind: kind, host: u.Host, url: u.String(), poster: o.HTTP}
	base.secrets = secretsOf(base.url, pass)
	switch kind {
	case KindSlack, KindTeams, KindGChat:
		if user != "" || hasPass {
			return nil, fmt.Errorf("%s target %s: the URL carries user information; give the webhook URL as the service shows it", kind, u.Host)
		}
		return &chatTarget{httpTarget: base}, nil
	case KindWebhook:
		if user != "" || len(pass) < MinWebhookSecretLen {
			return nil, fmt.Errorf("%s target %s: give the signing secret, at least %d bytes, as the URL's password: webhook+https://:<secret>@host/path (openssl rand -hex 32 makes one)", kind, u.Host, MinWebhookSecretLen)
		}
		return &webhookTarget{httpTarget: base, secret: pass}, nil
	case KindNtfy:
		if strings.Trim(u.Path, "/") == "" || strings.Contains(strings.Trim(u.Path, "/"), "/") {
			return nil, fmt.Errorf("%s target %s: the path must be the topic alone, e.g. ntfy+https://ntfy.sh/hotel-alerts", kind, u.Host)
		}
		t := &ntfyTarget{httpTarget: base}
		switch {
		case user == "" && hasPass:
			t.auth = "Bearer " + pass
		case user != "":
			t.auth = basicAuth(user, pass)
		}
		return t, nil
	}
	return nil, unknownKind(raw)
}

func parseEmail(rest string, o ParseOptions) (Target, error) {
	addr, _, _ := strings.Cut(rest, "?")
	addr, err := url.PathUnescape(addr)
	if err != nil || strings.Count(addr, "@") != 1 || strings.HasPrefix(addr, "@") || strings.HasSuffix(addr, "@") ||
		strings.ContainsAny(addr, " <>\r\n,;") {
		return nil, errors.New("mailto target: want one address, e.g. mailto:ops@example.com (list several targets for several recipients)")
	}
	if strings.Contains(rest, "?") {
		return nil, errors.New("mailto target: remove the ?query: the subject and text are the notice's")
	}
	if o.Email == nil || o.Email.Mailer == nil {
		return nil, errors.New("mailto target: no mail server: set TICKETBRIDGE_NOTIFY_SMTP_URL and TICKETBRIDGE_NOTIFY_FROM")
	}
	return &emailTarget{to: addr, email: *o.Email, retrier: o.HTTP.retrier()}, nil
}

// unknownKind names what is wrong with raw without echoing it: a bare
// https URL of a known service gets its prefix suggested.
func unknownKind(raw string) error {
	const want = "want KIND+https://… with KIND one of slack, teams, gchat, webhook, ntfy, or mailto:ADDRESS"
	u, err := url.Parse(raw)
	if err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		if k := guessKind(u.Hostname()); k != "" {
			return fmt.Errorf("a URL of %s without its kind: write %s+%s://%s/…", u.Hostname(), k, u.Scheme, u.Host)
		}
		return fmt.Errorf("a URL of %s without its kind: %s", u.Hostname(), want)
	}
	return fmt.Errorf("not a target: %s", want)
}

func guessKind(host string) string {
	switch {
	case host == "hooks.slack.com":
		return KindSlack
	case host == "chat.googleapis.com":
		return KindGChat
	case strings.HasSuffix(host, ".logic.azure.com"), strings.HasSuffix(host, ".powerplatform.com"):
		return KindTeams
	case host == "ntfy.sh":
		return KindNtfy
	}
	return ""
}

// kindName is kind when it is one of the known ones, else a word that
// echoes nothing of a URL that may have been cut at a stray "+".
func kindName(kind string) string {
	switch kind {
	case KindSlack, KindTeams, KindGChat, KindWebhook, KindNtfy:
		return kind
	}
	return "a"
}

func checkHTTPS(kind string, u *url.URL, allowInsecure bool) error {
	if u.Scheme == "https" || allowInsecure || smtpsend.Loopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("%s target %s: plain http to a host that is not loopback would carry its token in clear: use https, or set TICKETBRIDGE_ALLOW_INSECURE_HTTP=true to accept it", kindName(kind), u.Hostname())
}

// secretsOf lists what of a target's URL must never be printed: the whole
// URL, its path and each of its long segments, its query values, and the
// password.
func secretsOf(raw, pass string) []string {
	out := []string{raw}
	if pass != "" {
		out = append(out, pass, url.UserPassword("", pass).String())
	}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	if p := strings.Trim(u.EscapedPath(), "/"); p != "" {
		out = append(out, p)
		for seg := range strings.SplitSeq(p, "/") {
			if len(seg) >= 8 {
				out = append(out, seg)
			}
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if len(v) >= 4 {
				out = append(out, v, url.QueryEscape(v))
			}
		}
	}
	if u.RawQuery != "" {
		out = append(out, u.RawQuery)
	}
	return out
}

// scrub replaces every secret in s.
func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "xxxxx")
		}
	}
	return s
}

// hostOnly is host without a port when the port is the scheme's default.
func hostOnly(hostport string) string {
	if h, p, err := net.SplitHostPort(hostport); err == nil && (p == "443" || p == "80") {
		return h
	}
	return hostport
}

func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }
