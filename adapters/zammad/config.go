package zammad

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// EnvPrefix is the prefix of every variable the adapter reads.
const EnvPrefix = "TICKETBRIDGE_ZAMMAD_"

// Limits of [Config]; its defaults are its env tags'.
const (
	// MaxPageSize is Zammad's limit for per_page of a ticket search.
	MaxPageSize = 200
)

// Config is the adapter's configuration, read from the
// TICKETBRIDGE_ZAMMAD_* variables by [LoadConfig]. Printed or logged, it
// never shows the token (a [redact.Secret]).
type Config struct {
	// Common holds URL (the Zammad system's address, e.g.
	// https://helpdesk.hotel.example, without /api/v1), Timeout, PageSize (the per_page of the ticket searches; at
	// most 200) and AllowInsecureHTTP.
	saas.Common
	// Token is an access token of the Zammad user the bridge acts as,
	// sent as "Authorization: Token token={Token}".
	Token redact.Secret `env:"TOKEN"`
	// TokenFile names a file holding the token instead (a systemd
	// credential, a mounted secret); surrounding white space is ignored.
	TokenFile string `env:"TOKEN_FILE"`
	// Group is the name of the group that receives tickets of departments
	// Groups does not map.
	Group string `env:"GROUP,default=Users"`
	// Groups maps department codes to the helpdesk's groups; see
	// [ParseGroups].
	Groups Groups `env:"GROUPS"`
	// IDField is the name of the custom ticket attribute (a text field
	// made in the object manager) that holds the upstream ticket id.
	IDField string `env:"ID_FIELD,default=guest_request_id"`
	// DueAttribute is the name of a custom ticket attribute of format
	// Date & Time (datetime) that holds the request's due date
	// (target_due_at): Zammad has no due date of its own. "" carries no
	// due date. Create it with "Allow past" on: Zammad refuses every
	// update of a ticket whose value in an attribute without it has
	// passed (see [Adapter.Update]).
	DueAttribute string `env:"DUE_ATTRIBUTE"`
	// Customer is the customer of every ticket the bridge creates (Zammad
	// needs one; guests have no Zammad identity): an email address, which
	// Zammad creates as a customer when it does not know it, or the login
	// of an existing user.
	Customer string `env:"CUSTOMER"`
	// EventsSince is where Changes starts when it has no cursor (the first
	// start, or after the bridge's state was lost): an RFC 3339 time or a
	// date. Empty means the beginning.
	EventsSince saas.Since `env:"EVENTS_SINCE"`
	// PendingFor is how far ahead the pending till is set when the bridge
	// moves a ticket into a pending state (only with a status mapping
	// that names one).
	PendingFor time.Duration `env:"PENDING_FOR,default=24h"`
}

// LoadConfig reads the TICKETBRIDGE_ZAMMAD_* variables from env, fills
// defaults, reads TokenFile into Token and checks the result (see
// [Config.Validate]).
func LoadConfig(ctx context.Context, env envconfig.Lookuper) (Config, error) {
	return saas.Load(ctx, env, EnvPrefix, Name, "TOKEN", func(c *Config) (*redact.Secret, string) { return &c.Token, c.TokenFile })
}

// attrName is what Zammad's object manager accepts as an attribute name.
var attrName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Validate checks the configuration and returns an error naming the
// variable and what is wrong with its value. It never echoes the token.
func (c Config) Validate() error {
	saas.Defaults(&c) // on the copy: the tags' defaults for unset fields
	if err := urlOf(c.AllowInsecureHTTP).Check(c.URL); err != nil {
		return err
	}
	switch {
	case c.Token == "":
		return fmt.Errorf("%sTOKEN is not set: create an access token in Zammad (avatar > Profile > Token Access, with the permission ticket.agent) and give it here or in a file named by %sTOKEN_FILE", EnvPrefix, EnvPrefix)
	case strings.ContainsAny(c.Token.Reveal(), " \t\r\n\"'"):
		return fmt.Errorf("%sTOKEN contains white space or quotes: paste the token Zammad showed, alone", EnvPrefix)
	}
	if strings.TrimSpace(c.Group) != c.Group || strings.ContainsAny(c.Group, ",=\r\n") {
		return fmt.Errorf("%sGROUP %q: a group name without surrounding white space, commas or equals signs", EnvPrefix, c.Group)
	}
	if !attrName.MatchString(c.IDField) || len(c.IDField) > 64 {
		return fmt.Errorf("%sID_FIELD %q: the name of a Zammad ticket attribute, lower-case letters, digits and underscores, starting with a letter (e.g. guest_request_id)", EnvPrefix, c.IDField)
	}
	if c.DueAttribute != "" && (!attrName.MatchString(c.DueAttribute) || len(c.DueAttribute) > 64) {
		return fmt.Errorf("%sDUE_ATTRIBUTE %q: the name of a Zammad ticket attribute of format Date & Time, lower-case letters, digits and underscores, starting with a letter (e.g. guest_due_at)", EnvPrefix, c.DueAttribute)
	}
	if c.DueAttribute != "" && c.DueAttribute == c.IDField {
		return fmt.Errorf("%sDUE_ATTRIBUTE %q is %sID_FIELD too: the due date needs a Date & Time attribute of its own", EnvPrefix, c.DueAttribute, EnvPrefix)
	}
	cust := strings.TrimSpace(c.Customer)
	switch {
	case cust == "":
		return fmt.Errorf("%sCUSTOMER is not set: give the email address (or login) of the Zammad customer the bridge's tickets belong to, e.g. guest-requests@hotel.example; Zammad creates a customer for an address it does not know", EnvPrefix)
	case cust != c.Customer || strings.ContainsAny(cust, " \t\r\n,\"<>"):
		return fmt.Errorf("%sCUSTOMER %q: one email address or login, without spaces, commas or angle brackets", EnvPrefix, c.Customer)
	}
	if c.PendingFor < time.Minute {
		return fmt.Errorf("%sPENDING_FOR %s: want at least a minute", EnvPrefix, c.PendingFor)
	}
	if err := c.CheckTimeout(EnvPrefix); err != nil {
		return err
	}
	if c.PageSize < 1 || c.PageSize > MaxPageSize {
		return fmt.Errorf("%sPAGE_SIZE %d: Zammad's search pages hold 1 to %d tickets", EnvPrefix, c.PageSize, MaxPageSize)
	}
	return nil
}

// urlOf is the address setting's check (see [adapters.BaseURL]).
func urlOf(allowInsecure bool) adapters.BaseURL {
	return adapters.BaseURL{
		Var:               EnvPrefix + "URL",
		What:              "the Zammad system's address",
		Example:           "https://helpdesk.hotel.example",
		Credentials:       "put the token in " + EnvPrefix + "TOKEN",
		APISuffix:         "/api/v1",
		AllowInsecureHTTP: allowInsecure,
	}
}

// Groups is TICKETBRIDGE_ZAMMAD_GROUPS, department code to group, parsed once when read
// (go-envconfig's Decoder) by [ParseGroups].
type Groups map[string]string

// EnvDecode parses s with [ParseGroups].
func (g *Groups) EnvDecode(s string) (err error) {
	*g, err = ParseGroups(s)
	return err
}

// ParseGroups parses "department=Group name,…" (TICKETBRIDGE_ZAMMAD_GROUPS).
// An empty string is an empty map; a department may appear once.
func ParseGroups(s string) (map[string]string, error) {
	const form = "department=Group name"
	return adapters.ParseDepartments(EnvPrefix+"GROUPS", form, s, func(item, name string) (string, error) {
		if name == "" {
			return "", fmt.Errorf("%sGROUPS item %q: want %s", EnvPrefix, item, form)
		}
		return name, nil
	})
}
