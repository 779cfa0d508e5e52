package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

const marker = "s3cr3t-MARKER"

func TestURLHidesSecrets(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://tb:" + marker + "@db:5432/tb?sslmode=require", "postgres://tb:xxxxx@db:5432/tb?sslmode=xxxxx"},
		{"https://rt.example/?api_key=" + marker, "https://rt.example/?api_key=xxxxx"},
		{"https://x.example/p?a=1&a=" + marker + "&b=2#" + marker, "https://x.example/p?a=xxxxx&a=xxxxx&b=xxxxx"},
		{"https://" + marker + "@x.example/", "https://" + marker + "@x.example/"}, // a user name alone is kept
		{"https://x.example/plain", "https://x.example/plain"},
		{"postgres://tb@db/tb?password=" + marker, "postgres://tb@db/tb?password=xxxxx"},
		{"https://x.example/%zz?k=" + marker, "https://(a URL that does not parse)"},
		{"::" + marker, "(a URL that does not parse)"},
		{"mailto:" + marker, "mailto:xxxxx"},
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(tc.want, marker) {
			continue
		}
		if strings.Contains(got, marker) {
			t.Errorf("URL(%q) = %q shows the secret", tc.in, got)
		}
	}
}

func TestParsedLeavesItsArgument(t *testing.T) {
	u, _ := url.Parse("https://a:" + marker + "@x.example/?k=" + marker)
	before := u.String()
	_ = Parsed(u)
	if u.String() != before {
		t.Fatalf("Parsed changed its argument: %s", u)
	}
}

func TestErrorRedactsURLErrors(t *testing.T) {
	inner := errors.New("connection refused")
	ue := &url.Error{Op: "Get", URL: "https://x.example/t?api_key=" + marker, Err: inner}
	err := Error(fmt.Errorf("list tickets: %w", ue))
	if strings.Contains(err.Error(), marker) {
		t.Fatalf("Error kept the secret: %v", err)
	}
	if !strings.Contains(err.Error(), "api_key=xxxxx") || !strings.Contains(err.Error(), "list tickets: ") {
		t.Fatalf("Error lost the message's shape: %v", err)
	}
	var got *url.Error
	if !errors.As(err, &got) || !errors.Is(err, inner) {
		t.Fatalf("Error broke the chain: %v", err)
	}
	if Error(nil) != nil {
		t.Fatal("Error(nil) is not nil")
	}
	plain := errors.New("plain")
	if Error(plain) != plain {
		t.Fatal("Error changed an error without a URL")
	}
}
