package refserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// servePublicFaulty injects the configured faults around servePublic.
func (s *Server) servePublicFaulty(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	plan := s.faults.roll()
	if plan.latency > 0 {
		s.stats.fault("latency")
		if err := s.opts.Sleep(ctx, plan.latency); err != nil {
			return // the client is gone
		}
	}
	switch plan.kind {
	case faultDrop:
		s.stats.fault(string(plan.kind))
		abort(w)
		return
	case faultError:
		s.stats.fault(string(plan.kind))
		errorResponse(http.StatusInternalServerError, guestapi.CodeInternal, "injected fault: the request may be repeated").write(w)
		return
	case faultRateLimit:
		s.stats.fault(string(plan.kind))
		rateLimited(plan.retryAfter, "injected fault: too many requests").write(w)
		return
	}
	resp := s.servePublic(w, r)
	switch plan.kind {
	case faultLostAnswer:
		s.stats.fault(string(plan.kind))
		abort(w)
	case faultSlowBody:
		s.stats.fault(string(plan.kind))
		s.writeSlowly(w, r, resp, plan.slowDelay)
	default:
		resp.write(w)
	}
}

// servePublic answers the ticket and token endpoints.
func (s *Server) servePublic(w http.ResponseWriter, r *http.Request) response {
	switch r.URL.Path {
	case TokenPath:
		return s.serveToken(w, r)
	case VerifyPath:
		return s.serveVerify(r)
	}
	version, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, APIPrefix), "/")
	if version != "v1" {
		return errorResponse(http.StatusBadRequest, guestapi.CodeUnsupportedVersion,
			fmt.Sprintf("API version %q is not supported; the current version is v1", version))
	}
	segs := strings.Split(rest, "/")
	if segs[0] != "tickets" || len(segs) > 3 || (len(segs) > 1 && segs[1] == "") {
		return notFound(fmt.Sprintf("no endpoint at %s", r.URL.Path))
	}
	switch len(segs) {
	case 1:
		if r.Method != http.MethodGet {
			return methodNotAllowed(r.Method, http.MethodGet)
		}
		return s.withKey(r, TicketsRead, func(k *apiKey) response { return s.listTickets(r, k) })
	case 2:
		if r.Method != http.MethodGet {
			return methodNotAllowed(r.Method, http.MethodGet)
		}
		return s.withKey(r, TicketsRead, func(k *apiKey) response { return s.getTicket(segs[1], k) })
	}
	var op func(t *ticket, body []byte) response
	switch segs[2] {
	case "messages":
		op = s.postMessage
	case "status":
		op = s.postStatus
	default:
		return notFound(fmt.Sprintf("no endpoint at %s", r.URL.Path))
	}
	if r.Method != http.MethodPost {
		return methodNotAllowed(r.Method, http.MethodPost)
	}
	body, bad := s.readBody(w, r)
	if bad != nil {
		return *bad
	}
	if bad := checkContentType(r, body); bad != nil {
		return *bad
	}
	return s.withKey(r, TicketsWrite, func(k *apiKey) response { return s.modify(r, k, segs[1], body, op) })
}

// withKey authenticates the API key of r, checks its ticket right and the
// ticket rate limit, then runs fn under the store's lock.
func (s *Server) withKey(r *http.Request, need TicketRight, fn func(k *apiKey) response) response {
	cred, ok := bearer(r)
	if !ok {
		return unauthorized("send the API key as Authorization: Bearer rta_...")
	}
	if !strings.HasPrefix(cred, KeyPrefix) {
		if strings.HasPrefix(cred, tokenPrefix) {
			return unauthorized("ticket endpoints take the API key itself, not an access token")
		}
		return unauthorized("the credential is not an API key (they start with rta_)")
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	now := s.nowUTC()
	k := s.st.findKey(cred)
	if k == nil {
		return unauthorized("the API key is unknown or revoked")
	}
	if !s.st.keyLive(k, now) {
		return unauthorized("the API key has expired")
	}
	k.lastUsed = &now
	switch {
	case k.tickets == TicketsNone:
		return forbidden("tickets:" + string(need))
	case need == TicketsWrite && k.tickets != TicketsWrite:
		return forbidden("tickets:write")
	}
	if s.ticketLimiter != nil {
		if ok, wait := s.ticketLimiter.allow(k.org+"\x00"+k.name, now); !ok {
			return rateLimited(wait, "too many requests with this key")
		}
	}
	return fn(k)
}

// listTickets answers GET /tickets. Caller holds mu.
func (s *Server) listTickets(r *http.Request, k *apiKey) response {
	q := r.URL.Query()
	var status guestapi.Status
	if q.Has("status") {
		status = guestapi.Status(q.Get("status"))
		if !status.Known() {
			return jsonResponse(http.StatusBadRequest, guestapi.ErrorBody{Error: guestapi.CodeInvalidStatus,
				Allowed: statusStrings(guestapi.Statuses()), Message: fmt.Sprintf("status %q is not a status", status)})
		}
	}
	department, filterDept := q.Get("department"), q.Has("department")
	if filterDept && department == "" {
		return badRequest("department is empty; leave it out to list every department")
	}
	limit := 50
	if q.Has("limit") {
		v := q.Get("limit")
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return badRequest("limit %q is not a whole number from 1 to 200", v)
		}
		limit = min(n, 200)
	}
	out := guestapi.TicketList{Tickets: []guestapi.Ticket{}}
	for _, t := range s.st.sortedTickets(k.org) {
		if len(out.Tickets) == limit {
			break
		}
		if (status == "" || t.status == status) && (!filterDept || t.department == department) {
			out.Tickets = append(out.Tickets, t.listItem())
		}
	}
	return jsonResponse(http.StatusOK, out)
}

// lookup returns a ticket of k's organisation. Caller holds mu.
func (s *Server) lookup(id string, k *apiKey) (*ticket, *response) {
	t, ok := s.st.tickets[id]
	if !ok || t.org != k.org {
		resp := notFound(fmt.Sprintf("no ticket %q", id))
		return nil, &resp
	}
	return t, nil
}

// getTicket answers GET /tickets/{id}. Caller holds mu.
func (s *Server) getTicket(id string, k *apiKey) response {
	t, nf := s.lookup(id, k)
	if nf != nil {
		return *nf
	}
	th := guestapi.Thread{Ticket: t.detail(), Messages: make([]guestapi.Message, 0, len(t.messages))}
	for _, m := range t.messages {
		th.Messages = append(th.Messages, m.Message)
	}
	return jsonResponse(http.StatusOK, th)
}

// modify runs a modifying request with its Idempotency-Key: once the
// ticket is known to be the caller's (else 404), a key seen within the TTL
// in the organisation replays the stored answer. Only
// successful answers are stored, so a request corrected after a 4xx may
// reuse its key. Caller holds mu.
func (s *Server) modify(r *http.Request, k *apiKey, id string, body []byte, op func(*ticket, []byte) response) response {
	idem := r.Header.Get("Idempotency-Key")
	if len(idem) > maxIdemKey {
		return badRequest("Idempotency-Key is %d characters long; the limit is %d", len(idem), maxIdemKey)
	}
	t, nf := s.lookup(id, k)
	if nf != nil {
		return *nf
	}
	org := s.st.orgs[k.org]
	now := s.nowUTC()
	if idem != "" {
		if e, ok := org.idem[idem]; ok {
			if now.Before(e.at.Add(s.opts.IdempotencyTTL)) {
				return e.resp
			}
			delete(org.idem, idem)
		}
	}
	resp := op(t, body)
	if idem != "" && resp.status < 300 {
		if !now.Before(org.pruneAt) {
			for key, e := range org.idem {
				if !now.Before(e.at.Add(s.opts.IdempotencyTTL)) {
					delete(org.idem, key)
				}
			}
			org.pruneAt = now.Add(min(s.opts.IdempotencyTTL, time.Hour))
		}
		org.idem[idem] = idemEntry{resp: resp, at: now}
	}
	return resp
}

// decodeObject reads a JSON object body. A missing, empty or null body
// gives ok false and no error.
func decodeObject(body []byte) (fields map[string]json.RawMessage, resp *response) {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(body, &fields); err != nil {
		r := badRequest("decode request body: %v; send a JSON object", err)
		if _, isType := err.(*json.UnmarshalTypeError); isType {
			r = badRequest("request body is not a JSON object")
		}
		return nil, &r
	}
	return fields, nil
}

// present reports whether field f is there and not null.
func present(fields map[string]json.RawMessage, f string) bool {
	v, ok := fields[f]
	return ok && strings.TrimSpace(string(v)) != "null"
}

// postMessage answers POST /tickets/{id}/messages. A body field that is
// missing, null, empty or only white space is body_required. Caller holds mu.
func (s *Server) postMessage(t *ticket, body []byte) response {
	fields, bad := decodeObject(body)
	if bad != nil {
		return *bad
	}
	var msg guestapi.NewMessage
	if !present(fields, "body") {
		return errorResponse(http.StatusBadRequest, guestapi.CodeBodyRequired, "body is required: the message text")
	}
	if err := json.Unmarshal(fields["body"], &msg.Body); err != nil {
		return badRequest("body must be a string")
	}
	if strings.TrimSpace(msg.Body) == "" {
		return errorResponse(http.StatusBadRequest, guestapi.CodeBodyRequired, "body is empty: the message text is required")
	}
	if len(msg.Body) > s.opts.MaxMessageBytes {
		return badRequest("body is %d bytes long; the limit is %d bytes", len(msg.Body), s.opts.MaxMessageBytes)
	}
	if present(fields, "visible_to_guest") {
		if err := json.Unmarshal(fields["visible_to_guest"], &msg.VisibleToGuest); err != nil {
			return badRequest("visible_to_guest must be true or false")
		}
	}
	if present(fields, "author_name") {
		if err := json.Unmarshal(fields["author_name"], &msg.AuthorName); err != nil {
			return badRequest("author_name must be a string")
		}
		if len(msg.AuthorName) > maxAuthorLen {
			return badRequest("author_name is %d bytes long; the limit is %d", len(msg.AuthorName), maxAuthorLen)
		}
	}
	if strings.TrimSpace(msg.AuthorName) == "" {
		msg.AuthorName = "API"
	}
	m := guestapi.Message{ID: s.newMessageID(), AuthorType: guestapi.AuthorStaff, AuthorName: msg.AuthorName,
		Body: msg.Body, VisibleToGuest: msg.VisibleToGuest, CreatedAt: s.nowUTC()}
	s.st.appendMessage(t, InternalMessage{Message: m, Source: SourceAPI, External: true})
	s.log.Info("message posted", slog.String("ticket", t.id), slog.String("message", m.ID), slog.String("source", string(SourceAPI)))
	return jsonResponse(http.StatusOK, guestapi.PostMessageResult{Success: true, MessageID: m.ID})
}

// postStatus answers POST /tickets/{id}/status. Caller holds mu.
func (s *Server) postStatus(t *ticket, body []byte) response {
	fields, bad := decodeObject(body)
	if bad != nil {
		return *bad
	}
	invalid := func(msg string) response {
		return jsonResponse(http.StatusBadRequest, guestapi.ErrorBody{Error: guestapi.CodeInvalidStatus,
			Allowed: statusStrings(guestapi.SettableStatuses()), Message: msg})
	}
	if !present(fields, "status") {
		return invalid("status is required")
	}
	var status guestapi.Status
	if err := json.Unmarshal(fields["status"], &status); err != nil {
		return invalid("status must be a string")
	}
	if !status.Settable() {
		return invalid(fmt.Sprintf("status %q cannot be set through the API", status))
	}
	s.setStatusLocked(t, status, SourceAPI)
	return jsonResponse(http.StatusOK, guestapi.SetStatusResult{Success: true, Status: status})
}

// serveToken answers POST /api-auth/token: an API key for a 1 h token.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) response {
	if r.Method != http.MethodPost {
		return methodNotAllowed(r.Method, http.MethodPost)
	}
	if s.tokenLimiter != nil {
		if ok, wait := s.tokenLimiter.allow(clientAddr(r), s.nowUTC()); !ok {
			return rateLimited(wait, fmt.Sprintf("more than %d key exchanges in %s from this address",
				s.opts.TokenRateLimit.Requests, s.opts.TokenRateLimit.Window))
		}
	}
	body, bad := s.readBody(w, r)
	if bad != nil {
		return *bad
	}
	if bad := checkContentType(r, body); bad != nil {
		return *bad
	}
	fields, bad := decodeObject(body)
	if bad != nil {
		return *bad
	}
	var req guestapi.TokenRequest
	if present(fields, "api_key") {
		if err := json.Unmarshal(fields["api_key"], &req.APIKey); err != nil {
			return badRequest("api_key must be a string")
		}
	}
	if req.APIKey == "" {
		return unauthorized("api_key is missing")
	}
	if !strings.HasPrefix(req.APIKey, KeyPrefix) {
		return unauthorized("api_key is not an API key (they start with rta_)")
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	now := s.nowUTC()
	k := s.st.findKey(req.APIKey)
	if k == nil {
		return unauthorized("the API key is unknown or revoked")
	}
	if !s.st.keyLive(k, now) {
		return unauthorized("the API key has expired")
	}
	k.lastUsed = &now
	scopes := k.platform.scopes()
	if len(scopes) == 0 {
		return forbidden("read")
	}
	s.st.tokens = slicesDeleteExpired(s.st.tokens, now)
	value := newSecret(tokenPrefix)
	s.st.tokens = append(s.st.tokens, &accessToken{fp: fingerprint(value), key: k, expires: now.Add(TokenLifetime)})
	return jsonResponse(http.StatusOK, guestapi.AccessToken{AccessToken: value, TokenType: "Bearer",
		ExpiresIn: int(TokenLifetime / time.Second), Scopes: scopes, ProductType: s.st.orgs[k.org].productType})
}

func slicesDeleteExpired(ts []*accessToken, now time.Time) []*accessToken {
	out := ts[:0]
	for _, t := range ts {
		if now.Before(t.expires) {
			out = append(out, t)
		}
	}
	clear(ts[len(out):])
	return out
}

// serveVerify answers POST /api-auth/verify for an access token.
func (s *Server) serveVerify(r *http.Request) response {
	if r.Method != http.MethodPost {
		return methodNotAllowed(r.Method, http.MethodPost)
	}
	cred, ok := bearer(r)
	if !ok {
		return unauthorized("send the access token as Authorization: Bearer <token>")
	}
	if strings.HasPrefix(cred, KeyPrefix) {
		return unauthorized("the service API takes an access token from /api-auth/token, not the API key")
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	now := s.nowUTC()
	t := s.st.findToken(cred)
	if t == nil || !now.Before(t.expires) {
		return unauthorized("the access token is unknown or expired")
	}
	if !s.st.keyLive(t.key, now) {
		return unauthorized("the API key of this token was revoked or has expired")
	}
	return jsonResponse(http.StatusOK, guestapi.Verification{Organization: t.key.org, Scopes: t.key.platform.scopes(),
		ProductType: s.st.orgs[t.key.org].productType, ExpiresAt: t.expires})
}

// clientAddr is the host of the connection's remote address; proxies'
// headers are not trusted.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
