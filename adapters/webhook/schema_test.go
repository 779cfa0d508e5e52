package webhook_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

var update = flag.Bool("update", false, "rewrite docs/webhook/examples from what the adapter sends")

// docsDir holds the published schemas and examples.
var docsDir = filepath.Join("..", "..", "docs", "webhook")

// The Go types below mirror the published schemas, apart from the
// adapter's own types, so that a change on either side is caught: every
// delivery and example must decode into them with unknown fields
// refused, and their fields must be exactly the schema's properties.
type (
	schemaTicketCreated struct {
		ID       string             `json:"id"`
		Type     string             `json:"type"`
		TicketID string             `json:"ticket_id"`
		Ticket   schemaTicketFields `json:"ticket"`
	}
	schemaTicketFields struct {
		ID              string   `json:"id"`
		Department      string   `json:"department"`
		Status          string   `json:"status"`
		UpstreamStatus  string   `json:"upstream_status"`
		TaskDescription string   `json:"task_description"`
		Origin          string   `json:"origin"`
		Comments        *string  `json:"comments"`
		GuestRating     *float64 `json:"guest_rating"`
		CreatedAt       string   `json:"created_at"`
		UpdatedAt       string   `json:"updated_at"`
	}
	schemaMessageAdded struct {
		ID       string              `json:"id"`
		Type     string              `json:"type"`
		TicketID string              `json:"ticket_id"`
		Message  schemaMessageFields `json:"message"`
	}
	schemaMessageFields struct {
		ID             string `json:"id"`
		AuthorType     string `json:"author_type"`
		AuthorName     string `json:"author_name"`
		Body           string `json:"body"`
		VisibleToGuest bool   `json:"visible_to_guest"`
		CreatedAt      string `json:"created_at"`
	}
	schemaStatusChanged struct {
		ID             string `json:"id"`
		Type           string `json:"type"`
		TicketID       string `json:"ticket_id"`
		Status         string `json:"status"`
		UpstreamStatus string `json:"upstream_status"`
	}
	schemaPing struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	schemaTicketUpdated struct {
		ID       string         `json:"id"`
		Type     string         `json:"type"`
		TicketID string         `json:"ticket_id"`
		Changed  []string       `json:"changed"`
		Ticket   map[string]any `json:"ticket"`
		Previous map[string]any `json:"previous"`
	}
	schemaUpdatedFields struct {
		Department      string   `json:"department"`
		TaskDescription string   `json:"task_description"`
		TargetDueAt     *string  `json:"target_due_at"`
		GuestRating     *float64 `json:"guest_rating"`
		Comments        *string  `json:"comments"`
		Priority        *string  `json:"priority"`
	}
)

// outbound lists each delivered event type with its schema file and
// mirror type.
var outbound = []struct {
	event  string
	mirror any
	parts  map[string]any // nested objects: property -> mirror type
}{
	{webhook.EventTicketCreated, schemaTicketCreated{}, map[string]any{"ticket": schemaTicketFields{}}},
	{webhook.EventMessageAdded, schemaMessageAdded{}, map[string]any{"message": schemaMessageFields{}}},
	{webhook.EventStatusChanged, schemaStatusChanged{}, nil},
	{webhook.EventPing, schemaPing{}, nil},
	{webhook.EventTicketUpdated, schemaTicketUpdated{}, map[string]any{"ticket": schemaUpdatedFields{}}},
}

// exampleInputs makes the adapter send one event of each type, on the
// ticket of the published examples, and returns the bodies by type.
func exampleInputs(t *testing.T) map[string][]byte {
	t.Helper()
	r := newRig(t, false)
	ctx := t.Context()
	const ticketID = "7f0c2a1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	tk := adapters.Ticket{
		UpstreamID: ticketID, Department: "housekeeping", Status: guestapi.StatusNew,
		TaskDescription: "Extra towels for room 214", Origin: guestapi.OriginGuest,
		CreatedAt: time.Date(2026, 3, 14, 8, 26, 53, 589793000, time.UTC), UpdatedAt: time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC),
	}
	ref, err := r.a.EnsureTicket(ctx, tk)
	if err != nil {
		t.Fatal(err)
	}
	msg := adapters.Message{UpstreamID: "c4a1f0e2-9b8d-4c7e-a6f5-1e2d3c4b5a69", AuthorType: guestapi.AuthorGuest, AuthorName: "Ada Lovelace",
		Body: "Could we have two more bath towels, please?", Public: true, CreatedAt: time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC)}
	if _, err := r.a.Append(ctx, ref, []adapters.Message{msg}); err != nil {
		t.Fatal(err)
	}
	if err := r.a.SetStatus(ctx, ref, guestapi.StatusDone); err != nil {
		t.Fatal(err)
	}
	rating := 5.0
	old := adapters.Fields{Department: tk.Department, Title: tk.TaskDescription, Origin: tk.Origin}
	nw := old
	nw.Department, nw.Due, nw.Rating = "front_office", time.Date(2026, 3, 14, 18, 0, 0, 0, time.UTC), &rating
	if err := r.a.Update(ctx, ref, adapters.FieldUpdate{UpstreamID: ticketID, Old: old, New: nw,
		Changed: adapters.FieldSet(adapters.FieldDepartment | adapters.FieldDue | adapters.FieldRating)}); err != nil {
		t.Fatal(err)
	}
	if err := r.a.Check(ctx); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, d := range r.rc.Deliveries() {
		out[d.Event] = d.Body
	}
	return out
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

func strict(b []byte, into any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(into)
}

func writeExample(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docsDir, "examples", name), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSchemasMatchDeliveries checks the published schemas and examples
// against what the adapter actually sends.
func TestSchemasMatchDeliveries(t *testing.T) {
	sent := exampleInputs(t)
	for _, o := range outbound {
		t.Run(o.event, func(t *testing.T) {
			body, ok := sent[o.event]
			if !ok {
				t.Fatalf("the adapter sent no %s", o.event)
			}
			exPath := filepath.Join(docsDir, "examples", o.event+".json")
			if *update {
				var b bytes.Buffer
				if err := json.Indent(&b, body, "", "  "); err != nil {
					t.Fatal(err)
				}
				writeExample(t, o.event+".json", json.RawMessage(b.Bytes()))
			}
			schema := readJSON(t, filepath.Join(docsDir, o.event+".schema.json")).(map[string]any)

			// The mirror types have exactly the schema's properties.
			checkMirror(t, schema, schema, reflect.TypeOf(o.mirror), "")
			for prop, m := range o.parts {
				sub := schema["properties"].(map[string]any)[prop].(map[string]any)
				checkMirror(t, schema, sub, reflect.TypeOf(m), prop+".")
			}

			example, err := os.ReadFile(exPath)
			if err != nil {
				t.Fatalf("no published example: %v", err)
			}
			for what, b := range map[string][]byte{"delivery": body, "example": example} {
				if errs := validate(schema, schema, decodeAny(t, b), "$"); len(errs) > 0 {
					t.Errorf("the %s does not match the schema:\n  %s\n%s", what, strings.Join(errs, "\n  "), b)
				}
				into := reflect.New(reflect.TypeOf(o.mirror)).Interface()
				if err := strict(b, into); err != nil {
					t.Errorf("the %s does not decode into the schema's fields: %v", what, err)
				}
			}

			// The example is what the adapter sends, byte for byte in
			// meaning; only a ping's id is new every time.
			got, want := decodeAny(t, body), decodeAny(t, example)
			if o.event == webhook.EventPing {
				got.(map[string]any)["id"], want.(map[string]any)["id"] = "", ""
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the adapter sends\n%s\nthe published example is\n%s\n(go test -run TestSchemasMatchDeliveries -update rewrites it)", o.event, body, example)
			}
		})
	}
}

// checkMirror compares the properties of an object schema with the JSON
// fields of a mirror type, and its required list with every property
// (every field of every delivery is always present).
func checkMirror(t *testing.T, root, obj map[string]any, typ reflect.Type, prefix string) {
	t.Helper()
	obj = resolve(root, obj)
	var props, fields []string
	for p := range obj["properties"].(map[string]any) {
		props = append(props, prefix+p)
	}
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		fields = append(fields, prefix+name)
	}
	sort.Strings(props)
	sort.Strings(fields)
	if !slices.Equal(props, fields) {
		t.Errorf("schema properties %v, mirror fields %v", props, fields)
	}
	var req []string
	for _, r := range obj["required"].([]any) {
		req = append(req, prefix+r.(string))
	}
	sort.Strings(req)
	if !slices.Equal(req, props) {
		t.Errorf("schema requires %v; every property %v is always sent", req, props)
	}
	if obj["additionalProperties"] != false {
		t.Errorf("%sschema allows additional properties; a delivery has exactly these", prefix)
	}
}

var inboundExamples = []string{"inbound.reply", "inbound.note", "inbound.status"}

// TestInboundSchemaAndExamples checks that the published inbound examples
// match the schema and are what the endpoint accepts.
func TestInboundSchemaAndExamples(t *testing.T) {
	schema := readJSON(t, filepath.Join(docsDir, "inbound.schema.json")).(map[string]any)
	r := newRig(t, false)
	ctx := t.Context()
	if _, err := r.a.EnsureTicket(ctx, upTicket("7f0c2a1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b")); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]adapters.EventKind{"inbound.reply": adapters.EventReply, "inbound.note": adapters.EventNote, "inbound.status": adapters.EventStatus}
	cursor := adapters.Cursor("")
	for _, name := range inboundExamples {
		b, err := os.ReadFile(filepath.Join(docsDir, "examples", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if errs := validate(schema, schema, decodeAny(t, b), "$"); len(errs) > 0 {
			t.Errorf("%s does not match the schema: %s", name, strings.Join(errs, "; "))
		}
		var ev webhook.InboundEvent
		if err := strict(b, &ev); err != nil {
			t.Errorf("%s has fields the adapter does not know: %v", name, err)
		}
		if status, ans := post(t, r.a.InboundURL(), testSecret, time.Now(), b); status != 200 || !ans.OK {
			t.Fatalf("%s: the endpoint answered %d %+v", name, status, ans)
		}
		evs, next, err := r.a.Changes(ctx, cursor)
		if err != nil || len(evs) != 1 || evs[0].Kind != kinds[name] || evs[0].ID != ev.ID {
			t.Fatalf("%s came out of Changes as %+v, %v", name, evs, err)
		}
		cursor = next
	}
	// What the schema refuses, the endpoint refuses too.
	for _, bad := range []string{
		`{"type":"reply","ticket_id":"7f0c2a1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b","body":"x"}`,
		`{"id":"a","type":"reply","ticket_id":"7f0c2a1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"}`,
		`{"id":"a","type":"status","ticket_id":"7f0c2a1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"}`,
		`{"id":"a","type":"comment","ticket_id":"7f0c2a1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b","body":"x"}`,
		`{"id":"a","type":"note","ticket_id":"","body":"x"}`,
	} {
		if errs := validate(schema, schema, decodeAny(t, []byte(bad)), "$"); len(errs) == 0 {
			t.Errorf("the schema accepts %s", bad)
		}
		if status, _ := post(t, r.a.InboundURL(), testSecret, time.Now(), []byte(bad)); status != 400 {
			t.Errorf("the endpoint answered %d to %s, want 400", status, bad)
		}
	}
}

// TestSignatureExample checks the worked signature example receivers can
// test their code against.
func TestSignatureExample(t *testing.T) {
	path := filepath.Join(docsDir, "examples", "signature.json")
	type example struct {
		Comment   string `json:"comment"`
		Secret    string `json:"secret"`
		Timestamp int64  `json:"timestamp"`
		Body      string `json:"body"`
		Signed    string `json:"signed"`
		Signature string `json:"signature"`
	}
	if *update {
		body, err := os.ReadFile(filepath.Join(docsDir, "examples", "ping.json"))
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, body); err != nil {
			t.Fatal(err)
		}
		ex := example{
			Comment:   "HMAC-SHA256 under secret of the bytes of signed (timestamp, a dot, the raw body as sent), in lowercase hex after sha256=",
			Secret:    "whsec-example-0123456789abcdef0123456789abcdef", // an example, not a secret of any installation
			Timestamp: 1773480413, Body: compact.String(),
		}
		ex.Signed = fmt.Sprintf("%d.%s", ex.Timestamp, ex.Body)
		ex.Signature = webhook.Sign(ex.Secret, ex.Timestamp, []byte(ex.Body))
		writeExample(t, "signature.json", ex)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ex example
	if err := strict(b, &ex); err != nil {
		t.Fatal(err)
	}
	if len(ex.Secret) < webhook.MinSecretLen {
		t.Errorf("the example's secret is %d bytes long; the adapter refuses one under %d", len(ex.Secret), webhook.MinSecretLen)
	}
	if got := webhook.Sign(ex.Secret, ex.Timestamp, []byte(ex.Body)); got != ex.Signature {
		t.Errorf("Sign gives %s, the example says %s", got, ex.Signature)
	}
	if ex.Signed != fmt.Sprintf("%d.%s", ex.Timestamp, ex.Body) {
		t.Errorf("the example's signed string %q is not timestamp.body", ex.Signed)
	}
	if err := webhook.Verify(ex.Secret, fmt.Sprint(ex.Timestamp), ex.Signature, []byte(ex.Body), time.Unix(ex.Timestamp, 0), 0); err != nil {
		t.Errorf("Verify refuses the example: %v", err)
	}
}

// TestValidatorFails proves the validator below can say no.
func TestValidatorFails(t *testing.T) {
	schema := readJSON(t, filepath.Join(docsDir, "message.added.schema.json")).(map[string]any)
	good := `{"id":"5d3c9e0a-8f1b-5a2c-b3d4-e5f6a7b8c9d0","type":"message.added","ticket_id":"t","message":{"id":"m","author_type":"guest","author_name":"A","body":"b","visible_to_guest":true,"created_at":"2026-03-14T09:26:53.589793+00:00"}}`
	if errs := validate(schema, schema, decodeAny(t, []byte(good)), "$"); len(errs) > 0 {
		t.Fatalf("a valid body is refused: %v", errs)
	}
	for _, bad := range []string{
		strings.Replace(good, `"ticket_id":"t",`, ``, 1),                                   // required
		strings.Replace(good, `"ticket_id":"t"`, `"ticket_id":"t","extra":1`, 1),           // additional property
		strings.Replace(good, `"message.added"`, `"message.removed"`, 1),                   // const
		strings.Replace(good, `"visible_to_guest":true`, `"visible_to_guest":"yes"`, 1),    // type
		strings.Replace(good, `"body":"b"`, `"body":""`, 1),                                // minLength
		strings.Replace(good, `"5d3c9e0a-8f1b-5a2c-b3d4-e5f6a7b8c9d0"`, `"not-a-uuid"`, 1), // format uuid
		strings.Replace(good, `2026-03-14T09:26:53.589793+00:00`, `14/03/2026`, 1),         // format date-time
	} {
		if errs := validate(schema, schema, decodeAny(t, []byte(bad)), "$"); len(errs) == 0 {
			t.Errorf("the validator accepts %s", bad)
		}
	}
	if errs := validate(schema, map[string]any{"if": true}, "x", "$"); len(errs) == 0 {
		t.Error("the validator ignores a keyword it does not implement")
	}
}

// validate checks v against the subset of JSON Schema 2020-12 the
// published schemas use. A keyword outside that subset is an error, so a
// schema cannot silently say more than is checked.
func validate(root, schema map[string]any, v any, path string) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	for k := range schema {
		switch k {
		case "$schema", "$id", "title", "description", "$defs", "$ref", "type", "const", "enum", "required",
			"properties", "additionalProperties", "minLength", "maxLength", "format", "oneOf", "items":
		default:
			fail("keyword %q is not supported by this validator", k)
		}
	}
	if ref, ok := schema["$ref"].(string); ok {
		errs = append(errs, validate(root, resolve(root, map[string]any{"$ref": ref}), v, path)...)
	}
	if tp, ok := schema["type"]; ok {
		var types []string
		switch tp := tp.(type) {
		case string:
			types = []string{tp}
		case []any:
			for _, x := range tp {
				types = append(types, x.(string))
			}
		}
		if !slices.Contains(types, jsonType(v)) && !(jsonType(v) == "integer" && slices.Contains(types, "number")) {
			fail("type %s, want %v", jsonType(v), types)
			return errs
		}
	}
	if c, ok := schema["const"]; ok && !reflect.DeepEqual(c, v) {
		fail("%v, want the constant %v", v, c)
	}
	if e, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return reflect.DeepEqual(x, v) }) {
		fail("%v is not one of %v", v, e)
	}
	if s, ok := v.(string); ok {
		if n, ok := schema["minLength"].(json.Number); ok {
			if min, _ := n.Int64(); int64(utf8.RuneCountInString(s)) < min {
				fail("shorter than %d", min)
			}
		}
		if n, ok := schema["maxLength"].(json.Number); ok {
			if max, _ := n.Int64(); int64(utf8.RuneCountInString(s)) > max {
				fail("longer than %d", max)
			}
		}
		switch schema["format"] {
		case "uuid":
			if u, err := uuid.Parse(s); err != nil || u.String() != s {
				fail("%q is not a UUID in canonical form", s)
			}
		case "date-time":
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				fail("%q is not an RFC 3339 date-time", s)
			}
		case nil:
		default:
			fail("format %v is not supported by this validator", schema["format"])
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := schema["properties"].(map[string]any)
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if _, ok := obj[r.(string)]; !ok {
					fail("required property %q is missing", r)
				}
			}
		}
		for k, x := range obj {
			if sub, ok := props[k].(map[string]any); ok {
				errs = append(errs, validate(root, sub, x, path+"."+k)...)
			} else if schema["additionalProperties"] == false {
				fail("property %q is not allowed", k)
			}
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		if arr, ok := v.([]any); ok {
			for i, x := range arr {
				errs = append(errs, validate(root, items, x, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	if alts, ok := schema["oneOf"].([]any); ok {
		n := 0
		var why []string
		for i, alt := range alts {
			sub := validate(root, alt.(map[string]any), v, fmt.Sprintf("%s(oneOf %d)", path, i))
			if len(sub) == 0 {
				n++
			}
			why = append(why, sub...)
		}
		if n != 1 {
			fail("matches %d of the oneOf alternatives, want exactly 1: %s", n, strings.Join(why, "; "))
		}
	}
	return errs
}

// resolve follows a local $ref ("#/$defs/name").
func resolve(root, schema map[string]any) map[string]any {
	ref, ok := schema["$ref"].(string)
	if !ok {
		return schema
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		panic("unsupported $ref " + ref)
	}
	return root["$defs"].(map[string]any)[name].(map[string]any)
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
