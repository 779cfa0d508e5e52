package email

import (
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// stripReply cuts what a mail client quoted below a reply, and the
// signature. It is replaced by the shared reply-text package.
func stripReply(text string) string { return strings.TrimSpace(text) }

// htmlToText turns an HTML-only mail into text.
func htmlToText(html string) string { return adapters.HTMLText(html) }
