package adapters

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/internal/secretfile"
)

// BaseURL describes a helpdesk's address variable for [BaseURL.Parse]: its
// name and the hints its error messages give.
type BaseURL struct {
	// Var is the variable's name, e.g. TICKETBRIDGE_ZENDESK_URL.
	Var string
	// What says what the address is, e.g. "the Zendesk account's address".
	What string
	// Example is an address shown in the messages, e.g.
	// https://hotel.zendesk.com.
	Example string
	// Credentials says where credentials go instead of the URL, e.g.
	// "put the token in TICKETBRIDGE_ZAMMAD_TOKEN".
	Credentials string
	// APISuffix is the API path trimmed from the end of the address, e.g.
	// /api/v2, so that either form may be given.
	APISuffix string
}

// Parse checks raw and returns it without a trailing slash or APISuffix.
// It refuses an address with credentials, a query or a fragment. Plain
// http is accepted only for a loopback host (a local fake or a tunnel): a
// helpdesk's credentials must not cross a network in clear. The errors
// name b.Var and never show credentials.
func (b BaseURL) Parse(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("%s is not set: give %s, e.g. %s", b.Var, b.What, b.Example)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s does not parse as a URL: want e.g. %s", b.Var, b.Example)
	}
	if u.User != nil {
		return "", fmt.Errorf("%s carries credentials: %s", b.Var, b.Credentials)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%s %q has no host: want e.g. %s", b.Var, redact.Parsed(u), b.Example)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !Loopback(u.Hostname()) {
			return "", fmt.Errorf("%s %q: use https; plain http is accepted only for a loopback address", b.Var, redact.Parsed(u))
		}
	default:
		return "", fmt.Errorf("%s %q: the scheme must be https", b.Var, redact.Parsed(u))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s %q: remove the query or fragment", b.Var, redact.Parsed(u))
	}
	p := strings.TrimRight(u.Path, "/")
	if b.APISuffix != "" {
		p = strings.TrimSuffix(p, b.APISuffix)
	}
	u.Path = strings.TrimRight(p, "/")
	u.RawPath = ""
	return u.String(), nil
}

// Loopback reports whether host (a URL's Hostname) is localhost or a
// loopback IP address.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SecretOrFile returns the secret of the variable v: value when file is
// empty, else the content of file without surrounding white space (a
// systemd credential, a mounted secret), file being the value of v_FILE.
// Both set is an error, and so are an empty file and a file that users
// other than the service may read (package secretfile). The errors name v
// and v_FILE and never show the secret.
func SecretOrFile(v, value, file string) (string, error) {
	if file == "" {
		return value, nil
	}
	if value != "" {
		return "", fmt.Errorf("%s and %s_FILE are both set: use one", v, v)
	}
	// The path is configuration, not a secret; the errors hold only the
	// path and the reason.
	return secretfile.Read(file, v+"_FILE")
}

// ParseDepartments parses s, the value of the variable v, a
// comma-separated list of department=value items, into a map from
// department code to value. White space around items, codes and values is
// ignored, and so are empty items: an empty s is an empty map. An item
// without "=" or without a code is an error saying it should look like
// form (e.g. "department=groupid"); a department may appear once. value
// converts the text after "=" of item, which may be empty, and returns an
// error naming v and item when the text is not a value.
func ParseDepartments[T any](v, form, s string, value func(item, text string) (T, error)) (map[string]T, error) {
	out := map[string]T{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		dept, text, ok := strings.Cut(item, "=")
		dept, text = strings.TrimSpace(dept), strings.TrimSpace(text)
		if !ok || dept == "" {
			return nil, fmt.Errorf("%s item %q: want %s", v, item, form)
		}
		val, err := value(item, text)
		if err != nil {
			return nil, err
		}
		if _, dup := out[dept]; dup {
			return nil, fmt.Errorf("%s names department %q twice", v, dept)
		}
		out[dept] = val
	}
	return out, nil
}
