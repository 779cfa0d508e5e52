package notify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/mailtest"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/internal/smtpsend"
)

// A notice mailed through the real Postfix reaches the mailbox.
func TestMailToPostfix(t *testing.T) {
	s := mailtest.FromEnv(t)
	host, port, _ := strings.Cut(s.SMTP, ":")
	sender := smtpsend.New(smtpsend.Config{Host: host, Port: port, Security: smtpsend.StartTLS, Username: "bridge",
		Password: s.Passwords["bridge"], TLS: s.TLSConfig()})
	id := s.MessageID(t)
	ts, err := notify.ParseTargets("mailto:"+s.Addr("frontdesk"), notify.ParseOptions{Var: "V", HTTP: &notify.Poster{},
		Email: &notify.Email{Mailer: sender, From: s.Addr("bridge"), MessageID: func() string { return id }}})
	must(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	n := notify.New(notify.Options{Operators: ts})
	res := n.Test(ctx)
	if len(res) != 1 || res[0].Err != nil || res[0].Target != "mailto "+s.Domain {
		t.Fatalf("Test: %+v", res)
	}
	raw := string(s.Await(ctx, t, "frontdesk", "INBOX", id))
	for _, want := range []string{"Subject: [ticketbridge] ticketbridge test notice", "this target works", "Auto-Submitted: auto-generated"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the mail lacks %q:\n%s", want, raw)
		}
	}
}
