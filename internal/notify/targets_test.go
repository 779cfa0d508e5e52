package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/notify"
)

var errNoRoute = errors.New("no route to host")

func notice() notify.Notice {
	return notify.Notice{Phase: notify.Fired, Kind: notify.KeyRefused, Hotels: []string{"a"}, Cause: "401 <from> the API & co",
		Fix: "renew the key", Since: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC), At: time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC),
		StatusURL: "https://bridge.example.com/"}
}

// Each chat kind gets the payload its vendor documents.
func TestChatPayloads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &receiver{}
		ts := targets(t, poster(t, rec), "slack+http://127.0.0.1/slack, teams+http://127.0.0.1/teams gchat+http://127.0.0.1/gchat,ntfy+http://:tk_abc@127.0.0.1/topic")
		for _, tg := range ts {
			must(t, tg.Send(t.Context(), notice()))
		}
		var slack struct {
			Text   string `json:"text"`
			Blocks []struct {
				Type string `json:"type"`
				Text struct{ Type, Text string }
			} `json:"blocks"`
		}
		must(t, json.Unmarshal(rec.at("/slack")[0].body, &slack))
		if slack.Text == "" || len(slack.Blocks) != 2 || slack.Blocks[0].Type != "header" || slack.Blocks[1].Text.Type != "mrkdwn" ||
			!strings.Contains(slack.Blocks[1].Text.Text, "401 &lt;from&gt; the API &amp; co") || !strings.Contains(slack.Blocks[1].Text.Text, "<https://bridge.example.com/|") {
			t.Errorf("slack payload %s", rec.at("/slack")[0].body)
		}
		var teams struct {
			Type        string `json:"type"`
			Attachments []struct {
				ContentType string  `json:"contentType"`
				ContentURL  *string `json:"contentUrl"`
				Content     struct {
					Type, Version string
					Body          []map[string]any
					Actions       []map[string]any
				} `json:"content"`
			} `json:"attachments"`
		}
		must(t, json.Unmarshal(rec.at("/teams")[0].body, &teams))
		if teams.Type != "message" || len(teams.Attachments) != 1 || teams.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" ||
			teams.Attachments[0].Content.Type != "AdaptiveCard" || len(teams.Attachments[0].Content.Actions) != 1 ||
			teams.Attachments[0].Content.Actions[0]["type"] != "Action.OpenUrl" {
			t.Errorf("teams payload %s", rec.at("/teams")[0].body)
		}
		var gchat map[string]any
		must(t, json.Unmarshal(rec.at("/gchat")[0].body, &gchat))
		if txt, _ := gchat["text"].(string); len(gchat) != 1 || !strings.HasPrefix(txt, "*API key refused for hotel a*") {
			t.Errorf("gchat payload %s", rec.at("/gchat")[0].body)
		}
		n := rec.at("/topic")[0]
		if n.header.Get("Title") != "API key refused for hotel a" || n.header.Get("Priority") != "5" || n.header.Get("Click") != "https://bridge.example.com/" ||
			n.header.Get("Authorization") != "Bearer tk_abc" || !strings.Contains(string(n.body), "What to do: renew the key") ||
			!strings.Contains(n.header.Get("Tags"), "warning") {
			t.Errorf("ntfy request %v %s", n.header, n.body)
		}
	})
}

// A target that fails (and is retried, with backoff) delays nothing for
// the others, and is counted.
func TestFailingTargetAffectsNothingElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, notify.Options{GroupWindow: -1}, "slack+http://127.0.0.1/broken webhook+http://:"+secret+"@127.0.0.1/hook")
		e.rec.fail["/broken"] = http.StatusServiceUnavailable
		start := time.Now()
		for h := range 3 {
			must(t, e.n.Set(t.Context(), notify.Condition{Key: notify.Key{Hotel: string(rune('a' + h)), Kind: notify.KeyRefused}}))
		}
		// The good target has all three at once, while the broken one
		// still backs off on its first.
		synctest.Wait()
		if n, d := len(e.rec.at("/hook")), time.Since(start); n != 3 || d > 0 {
			t.Fatalf("the good target had %d notices after %s, behind the broken one", n, d)
		}
		synctest.Wait()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		c := e.n.Counters()
		if c.Targets[0].Failed != 3 || c.Targets[1].Sent != 3 || c.Targets[1].Failed != 0 || !strings.Contains(c.Targets[0].LastError, "HTTP 503") {
			t.Fatalf("counters %+v", c)
		}
		if n := len(e.rec.at("/broken")); n != 3*4 {
			t.Fatalf("broken target tried %d times, want 4 attempts for each of 3", n)
		}
		if len(e.j.All()) != 3 {
			t.Fatalf("journal %+v", e.j.All())
		}
		for _, ep := range e.j.All() {
			if ep.Pending != "" {
				t.Fatalf("episode %s still pending after its attempts", ep.Key)
			}
		}
	})
}

// No error, String or log line shows a target's token.
func TestSecretsNeverShown(t *testing.T) {
	const token = "T000SECRET/B000SECRET/XXXXSECRETXXXX"
	list := "slack+http://127.0.0.1/services/" + token + " gchat+http://127.0.0.1/v1/spaces/AAA/messages?key=KEYSECRET&token=TOKSECRET" +
		" ntfy+http://:tk_NTFYSECRET@127.0.0.1/topicSECRET webhook+http://:" + secret + "SECRET@127.0.0.1/hookSECRET"
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		rec := &receiver{fail: map[string]int{}}
		p := poster(t, rec)
		ts := targets(t, p, list)
		for _, g := range []string{"/services/" + token, "/v1/spaces/AAA/messages", "/topicSECRET", "/hookSECRET"} {
			rec.fail[g] = http.StatusNotFound // the answer echoes the URL
		}
		n := notify.New(notify.Options{Operators: ts, GroupWindow: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go n.Run(ctx)
		var texts []string
		for _, tg := range ts {
			texts = append(texts, tg.String())
		}
		for _, r := range n.Test(ctx) {
			if r.Err == nil {
				t.Fatalf("%s: no error from a 404", r.Target)
			}
			texts = append(texts, r.Err.Error())
		}
		must(t, n.Set(ctx, notify.Condition{Key: notify.Key{Hotel: "a", Kind: notify.KeyRefused}}))
		synctest.Wait()
		for _, c := range n.Counters().Targets {
			texts = append(texts, c.LastError)
		}
		texts = append(texts, logs.String())
		// A transport error (nothing listens) holds the URL in net/http's.
		dead := targets(t, &notify.Poster{HTTP: &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
			return nil, errNoRoute
		}}}, Retrier: notifyRetrier()}, list)
		for _, tg := range dead {
			if err := tg.Send(ctx, notice()); err != nil {
				texts = append(texts, err.Error())
			}
		}
		// Parse errors.
		for _, bad := range []string{"webhook+http://:short" + "SECRET@127.0.0.1/x", "https://hooks.slack.com/services/" + token, "slack+http://u:pSECRET@127.0.0.1/x",
			"ntfy+http://127.0.0.1/aSECRET/b", "mailto:x@y?subject=SECRET"} {
			_, err := notify.ParseTargets(bad, notify.ParseOptions{Var: "V", HTTP: p})
			if err == nil {
				t.Fatalf("%s parsed", bad)
			}
			texts = append(texts, err.Error())
		}
		for _, s := range texts {
			if strings.Contains(s, "SECRET") || strings.Contains(s, secret) {
				t.Errorf("shown: %s", s)
			}
		}
		if !strings.Contains(logs.String(), "slack 127.0.0.1") {
			t.Errorf("the log does not name the target by kind and host: %s", logs.String())
		}
		cancel()
		synctest.Wait()
	})
}

func TestHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &receiver{}
		p, err := notify.ParsePing("http://127.0.0.1/ping/uuid", "", notify.PingOptions{HTTP: poster(t, rec)})
		must(t, err)
		hb := notify.NewHeartbeat(p, 0)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go hb.Run(ctx)
		for range 5 { // five cycles within the minute: one ping
			hb.Beat(true)
			synctest.Wait()
			time.Sleep(10 * time.Second)
		}
		time.Sleep(20 * time.Second)
		hb.Beat(true) // past the minute
		synctest.Wait()
		hb.Beat(false) // a change of outcome pings at once
		synctest.Wait()
		hb.Beat(false)
		synctest.Wait()
		if ok, fail := len(rec.at("/ping/uuid")), len(rec.at("/ping/uuid/fail")); ok != 2 || fail != 1 {
			t.Fatalf("pings %d, fails %d; want 2 and 1", ok, fail)
		}
		if rec.at("/ping/uuid")[0].method != http.MethodGet || hb.Counters().Sent != 3 {
			t.Fatalf("method %s, counters %+v", rec.at("/ping/uuid")[0].method, hb.Counters())
		}
		cancel()
		synctest.Wait()
	})
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "urls")
	must(t, os.WriteFile(file, []byte("ntfy+https://ntfy.sh/hotel-alerts\n"), 0o600))
	c, err := notify.Load(t.Context(), envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_NOTIFY_URLS_FILE": file, "TICKETBRIDGE_NOTIFY_PING_URL": "https://hc-ping.com/uuid",
	}))
	must(t, err)
	if c.URLs != "ntfy+https://ntfy.sh/hotel-alerts" || c.Repeat != time.Hour || c.CyclesFailingAfter != 15*time.Minute {
		t.Fatalf("config %+v", c)
	}
	if len(c.Operators) != 1 || c.Operators[0].String() != "ntfy ntfy.sh" || c.Ping == nil {
		t.Fatalf("parsed %v, ping %v", c.Operators, c.Ping)
	}
	n, hb := c.Build(nil, "", nil)
	if n == nil || hb == nil || hb.String() != "heartbeat hc-ping.com" {
		t.Fatalf("Build: %v, %v", n, hb)
	}
	for env, want := range map[string]map[string]string{
		"both set":          {"TICKETBRIDGE_NOTIFY_URLS_FILE": file, "TICKETBRIDGE_NOTIFY_URLS": "ntfy+https://ntfy.sh/x"},
		"plain http":        {"TICKETBRIDGE_NOTIFY_URLS": "slack+http://hooks.slack.com/services/SECRET"},
		"mailto, no server": {"TICKETBRIDGE_NOTIFY_URLS": "mailto:ops@example.com"},
		"bad duration":      {"TICKETBRIDGE_NOTIFY_REPEAT": "0s"},
		"ping per":          {"TICKETBRIDGE_NOTIFY_PING_PER": "replica"},
	} {
		_, err := notify.Load(t.Context(), envconfig.MapLookuper(want))
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: %v", env, err)
		}
	}
}
