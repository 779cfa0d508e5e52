package freshdesk

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
const EnvPrefix = "TICKETBRIDGE_FRESHDESK_"

// DefaultRequester is the requester of the tickets the bridge creates, the
// default of Config.Requester. The .invalid domain is reserved (RFC 2606):
// mail Freshdesk sends to the requester can never be delivered to anybody.
// The other defaults of [Config] are its env tags'.
const DefaultRequester = "guest-requests@ticketbridge.invalid"

// Config is the adapter's configuration, read from the
// TICKETBRIDGE_FRESHDESK_* variables by [LoadConfig]. Printed or logged,
// it never shows the API key (a [redact.Secret]).
type Config struct {
	// Common holds URL (the helpdesk's address, e.g.
	// https://hotel.freshdesk.com, without /api/v2), Timeout, PageSize (the per_page of the lists the adapter reads; at
	// most 100) and AllowInsecureHTTP.
	saas.Common
	// APIKey is the API key of the agent the bridge acts as, sent as basic
	// auth with the password "X".
	APIKey redact.Secret `env:"API_KEY"`
	// APIKeyFile names a file holding the API key instead (a systemd
	// credential, a mounted secret); surrounding white space is ignored.
	APIKeyFile string `env:"API_KEY_FILE"`
	// IDField is the API name of the custom ticket field (single-line
	// text) that holds the id of the guest request a ticket mirrors.
	IDField string `env:"ID_FIELD,default=cf_guest_request_id"`
	// StatusField is the API name of the custom ticket field (single-line
	// text) where the bridge records the last status it accounted for, so
	// that a status an agent sets can be told from one the bridge set.
	StatusField string `env:"STATUS_FIELD,default=cf_guest_request_status"`
	// Requester is the e-mail address of the requester of every ticket the
	// bridge creates (guests have no Freshdesk contact). Freshdesk e-mails
	// the requester about its tickets, so it should be an address nobody
	// reads; the default cannot be delivered at all.
	Requester string `env:"REQUESTER,default=guest-requests@ticketbridge.invalid"`
	// Group is the id of the group that receives tickets of departments
	// Groups does not map; 0 leaves them unassigned.
	Group int64 `env:"GROUP"`
	// Groups maps department codes to the helpdesk's groups; see
	// [ParseGroups].
	Groups Groups `env:"GROUPS"`
	// Tag is added to every ticket the bridge creates, for views and
	// automations; "none" adds no tag.
	Tag string `env:"TAG,default=ticketbridge"`
	// Since is how far back the adapter looks when it has no cursor (the
	// first start, or after the bridge's state was lost) and on each start
	// for the tickets it made: an RFC 3339 time or a date. Empty means the
	// helpdesk's beginning; set it to the day the bridge went live on a
	// helpdesk with a long history.
	Since saas.Since `env:"SINCE"`
}

// LoadConfig reads the TICKETBRIDGE_FRESHDESK_* variables from env, fills
// defaults, reads APIKeyFile into APIKey and checks the result (see
// [Config.Validate]).
func LoadConfig(ctx context.Context, env envconfig.Lookuper) (Config, error) {
	return saas.Load(ctx, env, EnvPrefix, Name, "API_KEY", func(c *Config) (*redact.Secret, string) { return &c.APIKey, c.APIKeyFile })
}

// Validate checks the configuration and returns an error naming the
// variable and what is wrong with its value. It never echoes the API key.
func (c Config) Validate() error {
	saas.Defaults(&c) // on the copy: the tags' defaults for unset fields
	if err := urlOf(c.AllowInsecureHTTP).Check(c.URL); err != nil {
		return err
	}
	switch {
	case c.APIKey == "":
		return fmt.Errorf("%sAPI_KEY is not set: give the API key of the Freshdesk agent the bridge acts as (Profile settings > View API key), or a file holding it in %sAPI_KEY_FILE", EnvPrefix, EnvPrefix)
	case strings.ContainsAny(c.APIKey.Reveal(), " \t\r\n:"):
		return fmt.Errorf("%sAPI_KEY contains white space or a colon: paste the API key Freshdesk shows, alone", EnvPrefix)
	}
	if err := checkField("ID_FIELD", c.IDField); err != nil {
		return err
	}
	if err := checkField("STATUS_FIELD", c.StatusField); err != nil {
		return err
	}
	if c.IDField == c.StatusField {
		return fmt.Errorf("%sID_FIELD and %sSTATUS_FIELD both name %q: the bridge needs two fields", EnvPrefix, EnvPrefix, c.IDField)
	}
	if !validEmail(c.Requester) {
		return fmt.Errorf("%sREQUESTER %q is not an e-mail address", EnvPrefix, c.Requester)
	}
	if c.Group < 0 {
		return fmt.Errorf("%sGROUP %d is not a group id", EnvPrefix, c.Group)
	}
	if strings.ContainsAny(c.Tag, ",\t\r\n") || len([]rune(c.Tag)) > 32 {
		return fmt.Errorf("%sTAG %q: a Freshdesk tag holds at most 32 characters and no commas or line breaks", EnvPrefix, c.Tag)
	}
	if err := c.CheckTimeout(EnvPrefix); err != nil {
		return err
	}
	if c.PageSize < 1 || c.PageSize > 100 {
		return fmt.Errorf("%sPAGE_SIZE %d: Freshdesk pages hold 1 to 100 items", EnvPrefix, c.PageSize)
	}
	return nil
}

// checkField checks the API name of a custom field: Freshdesk names them
// cf_ followed by lower-case letters, digits and underscores.
func checkField(v, name string) error {
	rest, ok := strings.CutPrefix(name, "cf_")
	if !ok || rest == "" || strings.TrimLeft(rest, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return fmt.Errorf("%s%s %q is not the API name of a custom field: Freshdesk names them cf_ and the label in lower case with underscores, e.g. cf_guest_request_id", EnvPrefix, v, name)
	}
	return nil
}

func validEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && !strings.ContainsAny(s, " \t\r\n,;<>") && !strings.Contains(domain, "@") &&
		strings.Contains(domain, ".") && !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}

// urlOf is the address setting's check (see [adapters.BaseURL]).
func urlOf(allowInsecure bool) adapters.BaseURL {
	return adapters.BaseURL{
		Var:               EnvPrefix + "URL",
		What:              "the helpdesk's address",
		Example:           "https://hotel.freshdesk.com",
		Credentials:       "put the API key in " + EnvPrefix + "API_KEY",
		APISuffix:         "/api/v2",
		AllowInsecureHTTP: allowInsecure,
	}
}

// Groups is TICKETBRIDGE_FRESHDESK_GROUPS, department code to group, parsed once when read
// (go-envconfig's Decoder) by [ParseGroups].
type Groups map[string]int64

// EnvDecode parses s with [ParseGroups].
func (g *Groups) EnvDecode(s string) (err error) {
	*g, err = ParseGroups(s)
	return err
}

// ParseGroups parses "department=groupid,…" (TICKETBRIDGE_FRESHDESK_GROUPS).
// An empty string is an empty map; a department may appear once.
func ParseGroups(s string) (map[string]int64, error) {
	return adapters.ParseDepartments(EnvPrefix+"GROUPS", "department=groupid", s, func(item, text string) (int64, error) {
		id, err := strconv.ParseInt(text, 10, 64)
		if err != nil || id <= 0 {
			return 0, fmt.Errorf("%sGROUPS item %q: %q is not a Freshdesk group id (a positive number, shown in the address of the group in Admin > Team > Groups)", EnvPrefix, item, text)
		}
		return id, nil
	})
}
