package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/smtpsend"
)

// emailTarget mails a notice to one recipient through the Mailer.
type emailTarget struct {
	to      string
	email   Email
	retrier httpretry.Retrier
}

// String names the recipient's domain only: an address is personal data.
func (t *emailTarget) String() string {
	_, domain, _ := strings.Cut(t.to, "@")
	return "mailto " + domain
}

func (t *emailTarget) Send(ctx context.Context, n Notice) error {
	msg := mailMessage(t.email, t.to, n)
	out := t.retrier.Do(ctx, httpretry.Call{Op: "notify mailto", Idempotent: true}, func(ctx context.Context, _ int) httpretry.Result {
		err := t.email.Mailer.Send(ctx, t.email.From, []string{t.to}, msg)
		switch {
		case err == nil:
			return httpretry.Result{Class: httpretry.Success}
		case errors.Is(err, smtpsend.ErrAuth):
			return httpretry.Result{Err: err, Class: httpretry.Auth}
		case smtpsend.Permanent(err), errors.Is(err, smtpsend.ErrPlaintext), ctx.Err() != nil:
			return httpretry.Result{Err: err, Class: httpretry.Permanent}
		}
		return httpretry.Result{Err: err, Class: httpretry.Retryable}
	})
	if out.Class == httpretry.Success && out.Err == nil {
		return nil
	}
	e := &SendError{Target: t.String(), Attempts: out.Attempts, Class: out.Class}
	if out.Result.Err != nil {
		e.err = out.Result.Err
		e.detail = out.Result.Err.Error() // smtpsend's errors name the server, never the password
	}
	if out.Err != nil {
		if e.detail != "" {
			e.detail += "; "
		}
		e.detail += out.Err.Error()
		if e.err == nil {
			e.err = out.Err
		}
	}
	return e
}

// mailMessage is the notice as a plain-text mail with CRLF line ends.
func mailMessage(e Email, to string, n Notice) []byte {
	from := e.From
	var b strings.Builder
	hdr := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	hdr("From", from)
	hdr("To", to)
	hdr("Subject", mime.QEncoding.Encode("utf-8", "[ticketbridge] "+n.Title()))
	at := n.At
	if at.IsZero() {
		at = time.Now()
	}
	hdr("Date", at.UTC().Format(time.RFC1123Z))
	if e.MessageID != nil {
		hdr("Message-ID", "<"+e.MessageID()+">")
	} else {
		hdr("Message-ID", messageID(from))
	}
	hdr("MIME-Version", "1.0")
	hdr("Content-Type", "text/plain; charset=utf-8")
	hdr("Content-Transfer-Encoding", "8bit")
	hdr("Auto-Submitted", "auto-generated")
	b.WriteString("\r\n")
	for _, l := range n.Lines() {
		b.WriteString(strings.ReplaceAll(l, "\n", "\r\n") + "\r\n")
	}
	return []byte(b.String())
}

func messageID(from string) string {
	var r [12]byte
	_, _ = rand.Read(r[:])
	_, domain, ok := strings.Cut(from, "@")
	if !ok || domain == "" {
		domain = "ticketbridge.invalid"
	}
	domain = strings.Trim(domain, "> ")
	return fmt.Sprintf("<notify.%s@%s>", hex.EncodeToString(r[:]), domain)
}
