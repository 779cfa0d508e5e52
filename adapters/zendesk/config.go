package zendesk

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// EnvPrefix is the prefix of every variable the adapter reads.
const EnvPrefix = "TICKETBRIDGE_ZENDESK_"

// DefaultEventPages is how many pages of the ticket event export one
// Changes call reads at most while they hold nothing for the bridge; the
// export allows 10 requests a minute. The defaults of [Config] are its
// env tags'.
const DefaultEventPages = 3

// Config is the adapter's configuration, read from the TICKETBRIDGE_ZENDESK_*
// variables by [LoadConfig]. Printed or logged, it never shows the token (a [redact.Secret]).
type Config struct {
	// Common holds URL (the Zendesk account's address, e.g.
	// https://hotel.zendesk.com, without /api/v2), Timeout, PageSize (the page[size] of the lists the adapter reads:
	// tickets by external id, comments; at most 100) and AllowInsecureHTTP.
	saas.Common
	// Email is the address of the Zendesk user the bridge acts as (an
	// admin: the ticket event export needs it).
	Email string `env:"EMAIL"`
	// Token is a Zendesk API token, sent as basic auth
	// "{Email}/token:{Token}".
	Token redact.Secret `env:"TOKEN"`
	// TokenFile names a file holding the token instead (a systemd
	// credential, a mounted secret); surrounding white space is ignored.
	TokenFile string `env:"TOKEN_FILE"`
	// Group is the id of the group that receives tickets of departments
	// Groups does not map; 0 leaves them to Zendesk's routing.
	Group int64 `env:"GROUP"`
	// Groups maps department codes to group ids:
	// "housekeeping=360001234567,maintenance=360007654321".
	Groups Groups `env:"GROUPS"`
	// Tag is added to every ticket the bridge creates, for views and
	// triggers; "none" adds no tag.
	Tag string `env:"TAG,default=ticketbridge"`
	// DueField is the id of a custom date field that holds the request's
	// due date (target_due_at): Zendesk's own due_at is for task tickets
	// only. 0 carries no due date. A date field holds a day: the due
	// date's day in UTC.
	DueField int64 `env:"DUE_FIELD"`
	// EventsSince is where Changes starts when it has no cursor (the first
	// start, or after the bridge's state was lost): an RFC 3339 time or a
	// date. Empty means the account's beginning; set it to the day the
	// bridge went live on an account with a long history.
	EventsSince saas.Since `env:"EVENTS_SINCE"`
}

// LoadConfig reads the TICKETBRIDGE_ZENDESK_* variables from env, fills
// defaults, reads TokenFile into Token and checks the result (see
// [Config.Validate]).
func LoadConfig(ctx context.Context, env envconfig.Lookuper) (Config, error) {
	return saas.Load(ctx, env, EnvPrefix, Name, "TOKEN", func(c *Config) (*redact.Secret, string) { return &c.Token, c.TokenFile })
}

// Validate checks the configuration and returns an error naming the
// variable and what is wrong with its value. It never echoes the token.
func (c Config) Validate() error {
	saas.Defaults(&c) // on the copy: the tags' defaults for unset fields
	if err := urlOf(c.AllowInsecureHTTP).Check(c.URL); err != nil {
		return err
	}
	email := strings.TrimSpace(c.Email)
	switch {
	case email == "":
		return fmt.Errorf("%sEMAIL is not set: give the address of the Zendesk admin the bridge acts as", EnvPrefix)
	case !strings.Contains(email, "@") || strings.ContainsAny(email, ": \t\r\n/"):
		return fmt.Errorf("%sEMAIL %q is not an email address", EnvPrefix, email)
	}
	switch {
	case c.Token == "":
		return fmt.Errorf("%sTOKEN is not set: create an API token in Zendesk (Admin Center > Apps and integrations > APIs > Zendesk API) and give it here or in a file named by %sTOKEN_FILE", EnvPrefix, EnvPrefix)
	case strings.ContainsAny(c.Token.Reveal(), " \t\r\n:"):
		return fmt.Errorf("%sTOKEN contains white space or a colon: paste the token Zendesk showed, alone", EnvPrefix)
	}
	if c.Group < 0 {
		return fmt.Errorf("%sGROUP %d is not a group id", EnvPrefix, c.Group)
	}
	if c.DueField < 0 {
		return fmt.Errorf("%sDUE_FIELD %d is not a ticket field id", EnvPrefix, c.DueField)
	}
	if strings.ContainsAny(c.Tag, " \t\r\n,") {
		return fmt.Errorf("%sTAG %q: a Zendesk tag may not contain white space or commas", EnvPrefix, c.Tag)
	}
	if err := c.CheckTimeout(EnvPrefix); err != nil {
		return err
	}
	if c.PageSize < 1 || c.PageSize > 100 {
		return fmt.Errorf("%sPAGE_SIZE %d: Zendesk pages hold 1 to 100 items", EnvPrefix, c.PageSize)
	}
	return nil
}

// urlOf is the address setting's check (see [adapters.BaseURL]).
func urlOf(allowInsecure bool) adapters.BaseURL {
	return adapters.BaseURL{
		Var:               EnvPrefix + "URL",
		What:              "the Zendesk account's address",
		Example:           "https://hotel.zendesk.com",
		Credentials:       "put them in " + EnvPrefix + "EMAIL and " + EnvPrefix + "TOKEN",
		APISuffix:         "/api/v2",
		AllowInsecureHTTP: allowInsecure,
	}
}

// Groups is TICKETBRIDGE_ZENDESK_GROUPS, department code to group id,
// parsed once when read (go-envconfig's Decoder) by [ParseGroups].
type Groups map[string]int64

// EnvDecode parses s with [ParseGroups].
func (g *Groups) EnvDecode(s string) (err error) {
	*g, err = ParseGroups(s)
	return err
}

// ParseGroups parses "department=groupid,…" (TICKETBRIDGE_ZENDESK_GROUPS).
// An empty string is an empty map; a department may appear once.
func ParseGroups(s string) (map[string]int64, error) {
	return adapters.ParseDepartments(EnvPrefix+"GROUPS", "department=groupid", s, func(item, text string) (int64, error) {
		id, err := strconv.ParseInt(text, 10, 64)
		if err != nil || id <= 0 {
			return 0, fmt.Errorf("%sGROUPS item %q: %q is not a Zendesk group id (a positive number, shown in Admin Center > People > Groups)", EnvPrefix, item, text)
		}
		return id, nil
	})
}
