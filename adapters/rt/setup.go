package rt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// ready returns the setup, learning it from RT when it is not known yet.
func (a *Adapter) ready(ctx context.Context) (*setup, error) {
	a.setupMu.Lock()
	defer a.setupMu.Unlock()
	if a.setup != nil {
		return a.setup, nil
	}
	s, err := a.learn(ctx)
	if err != nil {
		return nil, err
	}
	a.setup = s
	return s, nil
}

// Check reaches RT, checks that it accepts the credentials, that each
// configured queue exists and lets the bridge create tickets, and that the
// custom fields exist and apply to every queue. Its error lists every
// problem found and says exactly what to create or grant in RT.
func (a *Adapter) Check(ctx context.Context) error {
	s, err := a.learn(ctx)
	if err != nil {
		return err
	}
	a.setupMu.Lock()
	a.setup = s
	a.setupMu.Unlock()
	return nil
}

var tokenUserRE = regexp.MustCompile(`^\d+-(\d+)-[0-9A-Fa-f]+$`)

// learn finds the bridge's RT user, the queues and the custom fields.
func (a *Adapter) learn(ctx context.Context) (*setup, error) {
	s := &setup{queueIDs: map[string]int64{}}
	if err := a.learnUser(ctx, s); err != nil {
		return nil, err
	}
	var problems []error
	// The custom fields the bridge uses: each must apply to every queue.
	type cfNeed struct {
		name, variable, kind string
		dst                  *int64
	}
	cfs := []cfNeed{{a.cfg.IDField, "ID_FIELD", "Enter one value", &s.idCF}}
	if a.sentOn() {
		cfs = append(cfs, cfNeed{a.cfg.SentField, "SENT_FIELD", "Enter multiple values", &s.sentCF})
	}
	if r := strings.TrimSpace(a.cfg.RatingField); r != "" {
		cfs = append(cfs, cfNeed{r, "RATING_FIELD", "Enter one value", &s.ratingCF})
	}
	missing := map[string][]string{} // custom field -> queues lacking it
	for _, name := range a.queueNames() {
		var q struct {
			ID                 flexID `json:"id"`
			Name               string `json:"Name"`
			TicketCustomFields []struct {
				ID   flexID `json:"id"`
				Name string `json:"name"`
			} `json:"TicketCustomFields"`
			Hyperlinks []struct {
				Ref  string `json:"ref"`
				Type string `json:"type"`
			} `json:"_hyperlinks"`
		}
		_, err := a.c.get(ctx, "check queue", "/queue/"+url.PathEscape(name), nil, &q)
		switch {
		case isNotFound(err) || (err == nil && q.ID == 0):
			problems = append(problems, fmt.Errorf("queue %q: RT has no such queue, or the user %s lacks the right SeeQueue on it (Admin → Queues)", name, s.me.name()))
			continue
		case errors.Is(err, adapters.ErrAuth):
			problems = append(problems, fmt.Errorf("queue %q: the user %s may not see it: grant SeeQueue on it (Admin → Queues → %s → User Rights): %w", name, s.me.name(), name, err))
			continue
		case err != nil:
			return nil, fmt.Errorf("check queue %q: %w", name, err)
		}
		s.queueIDs[name] = int64(q.ID)
		canCreate := false
		for _, h := range q.Hyperlinks {
			if h.Ref == "create" && h.Type == "ticket" {
				canCreate = true
			}
		}
		if !canCreate {
			problems = append(problems, fmt.Errorf("queue %q: the user %s lacks the right CreateTicket on it; grant it %s (Admin → Queues → %s → User Rights)", name, s.me.name(), bridgeRights, name))
		}
		for _, cf := range cfs {
			found := int64(0)
			for _, have := range q.TicketCustomFields {
				if strings.EqualFold(have.Name, cf.name) {
					found = int64(have.ID)
				}
			}
			if found == 0 {
				missing[cf.name] = append(missing[cf.name], name)
				continue
			}
			if *cf.dst != 0 && *cf.dst != found {
				problems = append(problems, fmt.Errorf("custom field %q: queues use two different custom fields of that name (ids %d and %d); apply one field to every queue the bridge uses", cf.name, *cf.dst, found))
			}
			*cf.dst = found
		}
	}
	for _, need := range cfs {
		cf, kind, variable := need.name, need.kind, need.variable
		qs := missing[cf]
		if len(qs) == 0 {
			continue
		}
		problems = append(problems, fmt.Errorf("custom field %q (%s%s) does not apply to the queue(s) %s, or the user %s may not see it. "+
			"In RT as an administrator: Admin → Custom Fields → Create: Name %q, Type %q, Applies to \"Tickets\" (skip when it exists); "+
			"on its \"Applies to\" page tick %s; on its \"User Rights\" page grant %s SeeCustomField and ModifyCustomField",
			cf, EnvPrefix, variable, quoteList(qs), s.me.name(), cf, kind, quoteList(qs), s.me.name()))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("check RT at %s: %w", a.c.base, errors.Join(problems...))
	}
	return s, nil
}

// bridgeRights lists the rights the bridge's RT user needs on each queue.
const bridgeRights = "SeeQueue, ShowTicket, CreateTicket, ModifyTicket, ReplyToTicket, CommentOnTicket, ShowTicketComments, SeeCustomField and ModifyCustomField"

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// learnUser finds the RT user the credentials belong to: the bridge's own
// user, whose writes Changes leaves out.
func (a *Adapter) learnUser(ctx context.Context, s *setup) error {
	var who, how string
	switch {
	case a.cfg.Token != "":
		how = EnvPrefix + "TOKEN"
		if m := tokenUserRE.FindStringSubmatch(a.cfg.Token.Reveal()); m != nil {
			who = m[1]
		} else if a.cfg.User != "" {
			who = a.cfg.User
		} else {
			return fmt.Errorf("find the bridge's RT user: %sTOKEN is not in RT's usual form <n>-<user id>-<hex>; set %sUSER to the name of the token's RT user", EnvPrefix, EnvPrefix)
		}
	default:
		who, how = a.cfg.User, EnvPrefix+"USER and "+EnvPrefix+"PASSWORD"
	}
	var u struct {
		ID       flexID `json:"id"`
		Name     string `json:"Name"`
		RealName string `json:"RealName"`
	}
	_, err := a.c.get(ctx, "find own user", "/user/"+url.PathEscape(who), nil, &u)
	switch {
	case errors.Is(err, adapters.ErrAuth):
		return fmt.Errorf("log in to RT at %s: RT refused the credentials of %s (a revoked token, a wrong password, or a disabled user): %w", a.c.base, how, err)
	case isNotFound(err) || (err == nil && u.Name == ""):
		return fmt.Errorf("log in to RT at %s: RT accepted %s but does not show the user %q as its own; with a token, set %sUSER to the token's user name", a.c.base, how, who, EnvPrefix)
	case err != nil:
		return fmt.Errorf("reach RT at %s: %w", a.c.base, err)
	}
	s.me = userRef{ID: u.Name, Name: u.Name, RealName: u.RealName}
	s.meID = int64(u.ID)
	if a.cfg.Token != "" && a.cfg.User != "" && !strings.EqualFold(a.cfg.User, u.Name) && tokenUserRE.MatchString(a.cfg.Token.Reveal()) {
		return fmt.Errorf("log in to RT at %s: the token belongs to the RT user %q, but %sUSER says %q", a.c.base, u.Name, EnvPrefix, a.cfg.User)
	}
	if strings.EqualFold(u.Name, "root") || strings.EqualFold(u.Name, "RT_System") {
		a.log.LogAttrs(ctx, slog.LevelWarn, "the bridge logs in to RT as a shared administrator; give it a user of its own so that its writes are told apart from the agents'",
			slog.String("op", "check"), slog.String("rt_user", u.Name))
	}
	return nil
}
