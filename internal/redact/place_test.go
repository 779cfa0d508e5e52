package redact

import "testing"

func TestPlace(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://api.example/functions/v1", "https://api.example/functions/v1"},
		{" HTTPS://Api.Example:443/functions/v1/ ", "https://api.example/functions/v1"},
		{"http://127.0.0.1:80/", "http://127.0.0.1"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"https://user:secret@rt.example/rt?token=abc#frag", "https://rt.example/rt"},
		{"https://[::1]:8443/x", "https://[::1]:8443/x"},
		{"https://[::1]/x", "https://[::1]/x"},
		{"/var/lib/ticketbridge", ""},
		{"not a url", ""},
		{"://x", ""},
	} {
		if got := Place(c.in); got != c.want {
			t.Errorf("Place(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
