package redact

import (
	"net"
	"net/url"
	"strings"
)

// Place returns where a URL leads, and nothing else: its scheme and host
// in lower case, its port unless it is the scheme's default, and its path
// without a trailing slash; never its user, password, query or fragment.
// Two spellings of one address give the same place
// ("HTTPS://Api.Example:443/v1/" and "https://api.example/v1"), so that
// places can be compared; a different host, port or path gives another.
// A value that does not parse as a URL with a host gives "".
func Place(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || !validScheme(u.Scheme) {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	switch port := u.Port(); {
	case port == "", scheme == "https" && port == "443", scheme == "http" && port == "80":
	default:
		host = net.JoinHostPort(strings.Trim(host, "[]"), port)
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	return scheme + "://" + host + path
}
