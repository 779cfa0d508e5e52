package refserver_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

// isolationCases is how many random requests TestOrganisationIsolation
// makes; TICKETBRIDGE_RELIABILITY=full makes ten times as many.
func isolationCases() int {
	if os.Getenv("TICKETBRIDGE_RELIABILITY") == "full" {
		return 5000
	}
	return 500
}

// TestOrganisationIsolation is a property test of invariant 5: with random
// organisations, random keys of random rights, random tickets and random
// ways of naming them (the id as it is, upper case, with a trailing slash,
// percent-escaped, beside an organisation in the query or a header), a
// key never gets a 2xx on another organisation's ticket, never sees one in
// a list, never reuses another organisation's Idempotency-Key, and no
// foreign ticket changes.
func TestOrganisationIsolation(t *testing.T) {
	seed := uint64(20260305)
	rnd := rand.New(rand.NewPCG(seed, seed))
	f := newFixture(t, noTokenLimit())
	ts := f.ts

	type org struct {
		id      string
		keys    []string // keys with some ticket right
		tickets []string
		texts   []string // descriptions and message bodies, which must not leak
	}
	orgs := []*org{{id: ts.Org}, {id: ts.OtherOrg}}
	for range 3 {
		id := uuid.NewString()
		if err := ts.Server.AddOrganization(id, "hotel"); err != nil {
			t.Fatal(err)
		}
		orgs = append(orgs, &org{id: id})
	}
	owner := map[string]*org{}
	platforms := []refserver.Platform{refserver.PlatformNone, refserver.PlatformRead, refserver.PlatformWrite, refserver.PlatformAdmin}
	for i, o := range orgs {
		for k := range 3 {
			right := []refserver.TicketRight{refserver.TicketsRead, refserver.TicketsWrite}[rnd.IntN(2)]
			key, err := ts.Server.IssueKey(o.id, refserver.KeySpec{Name: fmt.Sprintf("key-%d-%d", i, k), Platform: platforms[rnd.IntN(len(platforms))], Tickets: right})
			if err != nil {
				t.Fatal(err)
			}
			o.keys = append(o.keys, key.Value)
		}
		for k := range 1 + rnd.IntN(4) {
			desc := fmt.Sprintf("secret request %d of organisation %d", k, i)
			tv, err := ts.Server.CreateTicket(o.id, refserver.NewTicket{Department: fmt.Sprintf("dept%d", rnd.IntN(3)), TaskDescription: desc})
			if err != nil {
				t.Fatal(err)
			}
			body := fmt.Sprintf("private message %d of organisation %d", k, i)
			if _, err := ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: body}); err != nil {
				t.Fatal(err)
			}
			o.tickets = append(o.tickets, tv.ID)
			o.texts = append(o.texts, desc, body)
			owner[tv.ID] = o
		}
	}
	before := map[string]string{}
	for id := range owner {
		before[id] = viewJSON(t, ts, id)
	}

	// One Idempotency-Key per organisation, used first by its owner.
	idem := map[*org]string{}
	for _, o := range orgs {
		k := "idem-" + uuid.NewString()
		var writeKey string
		for _, key := range o.keys {
			if a := do(t, ts, req{method: "POST", path: ticketPath("/{id}/messages", o.tickets[0]), key: key, body: `{"body":"own post"}`,
				header: map[string]string{"Idempotency-Key": k}}); a.status == 200 {
				writeKey = key
				break
			}
		}
		if writeKey == "" {
			continue // no write key drawn for this organisation
		}
		idem[o] = k
		before[o.tickets[0]] = viewJSON(t, ts, o.tickets[0])
	}

	names := func(id string) []string {
		return []string{id, strings.ToUpper(id), id + "/", url.PathEscape(id), strings.ReplaceAll(id, "-", "%2D"), "./" + id, id + "%20"}
	}
	endpoints := []struct{ method, suffix, body string }{
		{"GET", "/{id}", ""},
		{"POST", "/{id}/messages", `{"body":"an intruder's message","visible_to_guest":true}`},
		{"POST", "/{id}/status", `{"status":"cancelled"}`},
	}
	n2xx := 0
	for i := range isolationCases() {
		me := orgs[rnd.IntN(len(orgs))]
		key := me.keys[rnd.IntN(len(me.keys))]
		var them *org
		for them == nil || them == me {
			them = orgs[rnd.IntN(len(orgs))]
		}
		h := map[string]string{}
		switch rnd.IntN(4) {
		case 0:
			h["X-Organization"] = them.id
		case 1:
			h["Organization"] = them.id
		}
		query := ""
		if rnd.IntN(3) == 0 {
			query = "?organization=" + them.id
		}
		if rnd.IntN(5) == 0 { // a list, filtered by the other organisation's department
			a := do(t, ts, req{method: "GET", path: ticketPath("", "") + "?limit=200&department=dept" + fmt.Sprint(rnd.IntN(3)) + strings.ReplaceAll(query, "?", "&"), key: key, header: h})
			checkNoLeak(t, i, a, them.tickets, them.texts, "")
			continue
		}
		ep := endpoints[rnd.IntN(len(endpoints))]
		id := them.tickets[rnd.IntN(len(them.tickets))]
		name := names(id)[rnd.IntN(len(names(id)))]
		if k, ok := idem[them]; ok && ep.method == "POST" && rnd.IntN(2) == 0 {
			h["Idempotency-Key"] = k // the key the owner used
		}
		a := do(t, ts, req{method: ep.method, path: ticketPath(ep.suffix, name) + query, key: key, body: ep.body, header: h})
		if a.status >= 200 && a.status < 300 {
			n2xx++
			t.Errorf("case %d: %s %s with a key of another organisation: %d %s", i, ep.method, ticketPath(ep.suffix, name), a.status, a.body)
		}
		// The answer does not confirm that the ticket exists: it is the
		// answer for an id nobody has, named the same way.
		unknown := uuid.NewString()
		u := do(t, ts, req{method: ep.method, path: ticketPath(ep.suffix, strings.ReplaceAll(name, id, unknown)) + query, key: key, body: ep.body, header: h})
		if strings.ReplaceAll(string(a.body), id, "ID") != strings.ReplaceAll(string(u.body), unknown, "ID") &&
			strings.ReplaceAll(string(a.body), strings.ToUpper(id), "ID") != strings.ReplaceAll(string(u.body), strings.ToUpper(unknown), "ID") || a.status != u.status {
			t.Errorf("case %d: a foreign ticket answers %d %s, an unknown one %d %s", i, a.status, a.body, u.status, u.body)
		}
		checkNoLeak(t, i, a, them.tickets, them.texts, name)
	}
	// Another organisation's Idempotency-Key on one's own ticket makes a
	// message of one's own, not a copy of the foreign answer.
	for o, k := range idem {
		for _, me := range orgs {
			if me == o {
				continue
			}
			for _, key := range me.keys {
				a := do(t, ts, req{method: "POST", path: ticketPath("/{id}/messages", me.tickets[len(me.tickets)-1]), key: key,
					body: `{"body":"same key, other organisation"}`, header: map[string]string{"Idempotency-Key": k}})
				if a.status == 200 {
					checkNoLeak(t, -1, a, o.tickets, o.texts, "")
					v, err := ts.Server.Ticket(me.tickets[len(me.tickets)-1])
					if err != nil {
						t.Fatal(err)
					}
					var res guestapi.PostMessageResult
					if err := json.Unmarshal(a.body, &res); err != nil {
						t.Fatal(err)
					}
					found := false
					for _, m := range v.Messages {
						found = found || m.ID == res.MessageID
					}
					if !found {
						t.Errorf("a foreign Idempotency-Key answered with message %s, not in the caller's ticket", res.MessageID)
					}
					break
				}
			}
		}
	}
	for id, b := range before {
		if owner[id] != nil && id == owner[id].tickets[len(owner[id].tickets)-1] {
			continue // written above by its own organisation
		}
		if got := viewJSON(t, ts, id); got != b {
			t.Errorf("ticket %s of another organisation changed:\nbefore %s\nafter  %s", id, b, got)
		}
	}
	t.Logf("%d random requests over %d organisations, %d keys, %d tickets: %d 2xx on foreign tickets",
		isolationCases(), len(orgs), 3*len(orgs), len(owner), n2xx)
}

func viewJSON(t *testing.T, ts *refservertest.TestServer, id string) string {
	t.Helper()
	v, err := ts.Server.Ticket(id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct {
		T  refserver.TicketView
		M  []refserver.InternalMessage
		Op []refserver.Operation
	}{v.Ticket, v.Messages, v.Operations})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkNoLeak fails when an answer names a foreign ticket or its text,
// besides repeating the name the caller sent.
func checkNoLeak(t *testing.T, i int, a answer, ids, texts []string, sent string) {
	t.Helper()
	body := strings.ToLower(string(a.body))
	if sent != "" {
		if dec, err := url.PathUnescape(sent); err == nil {
			sent = dec
		}
		body = strings.ReplaceAll(body, strings.ToLower(sent), "")
	}
	for _, s := range append(append([]string{}, ids...), texts...) {
		if strings.Contains(body, strings.ToLower(s)) {
			t.Errorf("case %d: an answer (%d) shows another organisation's %q: %s", i, a.status, s, a.body)
		}
	}
}

// TestSecretsComparedInConstantTime checks the code path of every secret
// comparison of the server: keys and access tokens are found by comparing
// SHA-256 fingerprints with crypto/subtle over every stored one (no early
// exit, no ==), and the console token with crypto/subtle too.
func TestSecretsComparedInConstantTime(t *testing.T) {
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}
	for _, name := range []string{"store.go", "console.go", "public.go", "server.go"} {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				funcs[fd.Name.Name] = fd
			}
		}
	}
	for _, name := range []string{"findKey", "findToken", "serveConsole"} {
		fd := funcs[name]
		if fd == nil {
			t.Fatalf("no function %s: the test must follow the code", name)
		}
		subtle := 0
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if isConstantTimeCompare(n) {
					subtle++
				}
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Equal" || sel.Sel.Name == "Compare") {
					t.Errorf("%s: %s compares a secret with %s", fset.Position(n.Pos()), name, sel.Sel.Name)
				}
			case *ast.BinaryExpr:
				if comparesSecret(n, "fp", "consoleToken", "cred", "secret") {
					t.Errorf("%s: %s compares a secret with %s", fset.Position(n.Pos()), name, n.Op)
				}
			case *ast.RangeStmt:
				ast.Inspect(n.Body, func(m ast.Node) bool {
					switch m.(type) {
					case *ast.ReturnStmt, *ast.BranchStmt:
						t.Errorf("%s: %s leaves its loop over the stored secrets early", fset.Position(m.Pos()), name)
					}
					return true
				})
			}
			return true
		})
		if subtle == 0 {
			t.Errorf("%s does not use crypto/subtle.ConstantTimeCompare", name)
		}
	}
	// Nowhere else is a fingerprint compared.
	for name, fd := range funcs {
		if name == "findKey" || name == "findToken" {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if be, ok := n.(*ast.BinaryExpr); ok && comparesSecret(be, "fp") {
				t.Errorf("%s: %s compares fingerprints with %s", fset.Position(be.Pos()), name, be.Op)
			}
			return true
		})
	}
}

// comparesSecret reports whether be is an == or != of which a side refers
// to one of the names; the result of subtle.ConstantTimeCompare compared
// with 1 is not.
func comparesSecret(be *ast.BinaryExpr, names ...string) bool {
	if be.Op != token.EQL && be.Op != token.NEQ {
		return false
	}
	for _, side := range []ast.Expr{be.X, be.Y} {
		if isConstantTimeCompare(side) {
			return false
		}
	}
	return mentions(be, names...)
}

func isConstantTimeCompare(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "ConstantTimeCompare" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "subtle"
}

// mentions reports whether n refers to a variable or field with one of
// the names.
func mentions(n ast.Node, names ...string) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		var name string
		switch m := m.(type) {
		case *ast.Ident:
			name = m.Name
		case *ast.SelectorExpr:
			name = m.Sel.Name
		}
		for _, x := range names {
			if name == x {
				found = true
			}
		}
		return !found
	})
	return found
}

// TestConsoleRefusesWritesWithoutToken: console writes without the console
// token (none, a wrong one, an API key) are refused with 401 and change
// nothing.
func TestConsoleRefusesWritesWithoutToken(t *testing.T) {
	f := newFixture(t)
	ts := f.ts
	before := viewJSON(t, ts, f.ticket)
	n := len(ts.Server.Tickets(ts.Org))
	for name, h := range map[string]map[string]string{
		"missing": {}, "wrong": {"Authorization": "Bearer nope"},
		"api key": {"Authorization": "Bearer " + ts.Keys.AdminTicketsWrite},
	} {
		for _, r := range []req{
			{method: "POST", path: "/console/v1/tickets", body: `{"organization":"` + ts.Org + `","department":"spa","task_description":"forged"}`},
			{method: "POST", path: "/console/v1/tickets/" + f.ticket + "/messages", body: `{"author_type":"guest","body":"forged"}`},
			{method: "POST", path: "/console/v1/organizations", body: `{"id":"` + uuid.NewString() + `"}`},
			{method: "PUT", path: "/console/v1/faults", body: `{"error_rate":1}`},
		} {
			r.header = h
			if a := do(t, ts, r); a.status != 401 || a.errorCode(t) != "unauthorized" {
				t.Errorf("%s: %s %s: %d %s, want 401", name, r.method, r.path, a.status, a.body)
			}
		}
	}
	if got := viewJSON(t, ts, f.ticket); got != before || len(ts.Server.Tickets(ts.Org)) != n || len(ts.Server.Organizations()) != 2 {
		t.Error("a refused console request changed something")
	}
	if fs := ts.Server.Faults(); fs.ErrorRate != 0 || fs.Hook != nil {
		t.Error("a refused console request set faults")
	}
}

// TestOversizedBodiesRefused: every endpoint that reads a body (ticket
// writes, the token exchange, the console) refuses one over
// Options.MaxRequestBytes with 400 before doing anything, with the
// default limit (1 MiB) and a configured one.
func TestOversizedBodiesRefused(t *testing.T) {
	for _, limit := range []int64{0, 4096} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			f := newFixture(t, refservertest.WithOptions(refserver.Options{ConsoleToken: "c", MaxRequestBytes: limit, TokenRateLimit: refserver.RateLimit{Requests: -1}}))
			ts := f.ts
			max := limit
			if max == 0 {
				max = refserver.DefaultMaxRequestBytes
			}
			pad := strings.Repeat("x", int(max))
			before := viewJSON(t, ts, f.ticket)
			console := map[string]string{"Authorization": "Bearer c"}
			for _, r := range []req{
				{method: "POST", path: ticketPath("/{id}/messages", f.ticket), key: ts.Keys.TicketsWrite, body: `{"body":"` + pad + `"}`},
				{method: "POST", path: ticketPath("/{id}/status", f.ticket), key: ts.Keys.TicketsWrite, body: `{"status":"done","pad":"` + pad + `"}`},
				{method: "POST", path: "/api-auth/token", body: `{"api_key":"` + ts.Keys.TicketsWrite + `","pad":"` + pad + `"}`},
				{method: "POST", path: "/console/v1/tickets/" + f.ticket + "/messages", header: console, body: `{"author_type":"guest","body":"` + pad + `"}`},
				{method: "POST", path: "/console/v1/tickets", header: console, body: `{"organization":"` + ts.Org + `","department":"spa","task_description":"` + pad + `"}`},
			} {
				a := do(t, ts, r)
				if a.status != 400 || !strings.Contains(string(a.body), fmt.Sprintf("larger than the limit of %d bytes", max)) {
					t.Errorf("%s %s with %d bytes: %d %.200s", r.method, r.path, len(r.body), a.status, a.body)
				}
			}
			if got := viewJSON(t, ts, f.ticket); got != before || len(ts.Server.Tickets(ts.Org)) != 1 {
				t.Error("an oversized request changed something")
			}
		})
	}
}
