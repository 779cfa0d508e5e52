package notify

import (
	"strings"
	"time"
)

// The payload of each vendor, as its incoming webhook documents it.

// slackEscape escapes the three characters Slack's mrkdwn gives a meaning
// to in text.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackPayload is a Slack incoming webhook's message: text (the fallback
// shown in notifications) and blocks (a header and a section).
func slackPayload(n Notice) map[string]any {
	lines := n.Lines()
	for i, l := range lines {
		lines[i] = slackEscape.Replace(l)
		if n.StatusURL != "" && strings.HasPrefix(l, "Status page: ") {
			lines[i] = "<" + n.StatusURL + "|Open the status page>"
		}
	}
	return map[string]any{
		"text": n.Title(),
		"blocks": []any{
			map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": truncate(n.Title(), 150)}},
			map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": truncate(strings.Join(lines, "\n"), 3000)}},
		},
	}
}

// teamsPayload is the message a Teams workflow started by "When a Teams
// webhook request is received" posts: an Adaptive Card as the first
// attachment of a message.
func teamsPayload(n Notice) map[string]any {
	body := []any{
		map[string]any{"type": "TextBlock", "text": n.Title(), "size": "Large", "weight": "Bolder", "wrap": true},
	}
	var facts []any
	var rest []string
	for _, l := range n.Lines() {
		if k, v, ok := strings.Cut(l, ": "); ok && !strings.Contains(k, " to do") && k != "Status page" && len(k) < 20 {
			facts = append(facts, map[string]any{"title": k, "value": v})
			continue
		}
		if strings.HasPrefix(l, "Status page: ") {
			continue
		}
		rest = append(rest, l)
	}
	if len(facts) > 0 {
		body = append(body, map[string]any{"type": "FactSet", "facts": facts})
	}
	for _, l := range rest {
		body = append(body, map[string]any{"type": "TextBlock", "text": l, "wrap": true})
	}
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard",
		"version": "1.4",
		"body":    body,
	}
	if n.StatusURL != "" {
		card["actions"] = []any{map[string]any{"type": "Action.OpenUrl", "title": "Open the status page", "url": n.StatusURL}}
	}
	return map[string]any{
		"type": "message",
		"attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"contentUrl":  nil,
			"content":     card,
		}},
	}
}

// gchatPayload is a Google Chat incoming webhook's text message: *bold*
// title, then the lines, the status page as a link.
func gchatPayload(n Notice) map[string]any {
	lines := n.Lines()
	for i, l := range lines {
		if n.StatusURL != "" && strings.HasPrefix(l, "Status page: ") {
			lines[i] = "<" + n.StatusURL + "|Open the status page>"
		}
	}
	return map[string]any{"text": "*" + n.Title() + "*\n" + strings.Join(lines, "\n")}
}

// WebhookNotice is the JSON body of a webhook target's POST, signed with
// the X-Ticketbridge-Timestamp and X-Ticketbridge-Signature headers of
// package internal/hmacsig; its X-Ticketbridge-Event header is "notice".
type WebhookNotice struct {
	Type      string    `json:"type"` // "notice"
	Phase     Phase     `json:"phase"`
	Kind      Kind      `json:"kind,omitempty"`
	Hotels    []string  `json:"hotels,omitempty"`
	Subject   string    `json:"subject,omitempty"`
	Cause     string    `json:"cause,omitempty"`
	Fix       string    `json:"fix,omitempty"`
	Since     time.Time `json:"since,omitzero"`
	At        time.Time `json:"at"`
	StatusURL string    `json:"status_url,omitempty"`
	Title     string    `json:"title"`
	Text      string    `json:"text"`
}

func webhookPayload(n Notice) WebhookNotice {
	return WebhookNotice{
		Type: "notice", Phase: n.Phase, Kind: n.Kind, Hotels: n.Hotels, Subject: n.Subject, Cause: n.Cause,
		Fix: n.Fix, Since: n.Since.UTC(), At: n.At.UTC(), StatusURL: n.StatusURL, Title: n.Title(),
		Text: strings.Join(n.Lines(), "\n"),
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s[:n-1])
	if len(r) > 0 {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}
