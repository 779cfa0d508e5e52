package statuspage

import (
	"fmt"
	"html"
	"strings"
	"testing"
	"time"
)

// TestRequestPageShowsMessagesToStaff: a request's page lists its
// messages by id to anyone, and to a signed-in user also who wrote each,
// when, and its first words.
func TestRequestPageShowsMessagesToStaff(t *testing.T) { atT0(t, testRequestPageShowsMessagesToStaff) }

func testRequestPageShowsMessagesToStaff(t *testing.T) {
	p := newTestPage(t, testToken)
	first := fmt.Sprintf("%08d-0000-4000-8000-%012d", 0, 0)
	_, body := p.do("GET", "/tickets/"+first, nil, nil)
	for _, want := range []string{"m-0-0", "c-0-0", "m-own", "ev-sent"} {
		if !strings.Contains(body, want) {
			t.Errorf("signed out, the request page lacks %q", want)
		}
	}
	for _, bad := range []string{guestWords.FirstWords, guestWords.AuthorName, staffWords.FirstWords, guestWords.WrittenAt.Local().Format(time.DateTime)} {
		if strings.Contains(html.UnescapeString(body), bad) {
			t.Errorf("signed out, the request page shows %q", bad)
		}
	}
	if resp := p.login("Ines", testToken); resp.StatusCode != 303 {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	_, body = p.do("GET", "/tickets/"+first, nil, nil)
	text := html.UnescapeString(body)
	for _, want := range []string{
		guestWords.FirstWords, "guest <b>Mrs Example</b>", guestWords.WrittenAt.Local().Format(time.DateTime),
		staffWords.FirstWords, "staff <b>Ana Agent</b>", staffWords.WrittenAt.Local().Format(time.DateTime),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("signed in, the request page lacks %q", want)
		}
	}
	if strings.Contains(p.logs.String(), guestWords.FirstWords) {
		t.Error("the log holds a guest's words")
	}
}
