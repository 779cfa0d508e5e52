// Package prometheus_test checks the monitoring files in deploy/: the
// Grafana dashboard (deploy/grafana/ticketbridge.json) and the alert rules
// (deploy/prometheus/alerts.yml). It holds no code of the daemon.
//
// Without a Prometheus it checks that the dashboard is valid JSON of the
// expected shape, that each alert has a for:, a severity, a summary and a
// description, and that every ticketbridge_* name in both files is a
// metric the daemon's source declares. With CI_PROMETHEUS_URL set to a
// Prometheus that scrapes a running daemon (deploy/ci-prometheus.sh does
// that), it also runs every dashboard query there and checks that every
// metric the files name was scraped.
package prometheus_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	root      = "../.."
	dashboard = "../grafana/ticketbridge.json"
	rules     = "alerts.yml"
	ruleTests = "alerts_test.yml"
)

// pending are metrics the dashboard and the rules use before the daemon
// exports them: their panels stay empty and their alerts silent until it
// does. Remove a name once the daemon declares it.
var pending = map[string]string{}

var metricName = regexp.MustCompile(`\bticketbridge_[a-z_]+\b`)

// panel is the part of a Grafana panel the checks read.
type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

type grafanaDashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	var d grafanaDashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: not valid JSON: %v", dashboard, err)
	}
	if dec.More() {
		t.Fatalf("%s: data after the dashboard object", dashboard)
	}
	return d
}

func TestDashboardShape(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q, title %q: want both set", d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	for name, typ := range map[string]string{"datasource": "datasource", "job": "query", "instance": "query", "hotel": "query"} {
		if vars[name] != typ {
			t.Errorf("template variable %q: type %q, want %q", name, vars[name], typ)
		}
	}
	ids := map[int]string{}
	queries := 0
	for _, p := range d.Panels {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panel id %d used by %q and %q", p.ID, prev, p.Title)
		}
		ids[p.ID] = p.Title
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource must be the ${datasource} variable, so that an import asks for it", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q, query %s: empty", p.Title, q.RefID)
			}
			if !strings.Contains(q.Expr, `instance=~"$instance"`) {
				t.Errorf("panel %q, query %s: does not follow the instance variable: %s", p.Title, q.RefID, q.Expr)
			}
			if strings.Contains(q.Expr, "ticketbridge_") && !strings.Contains(q.Expr, "_build_info") &&
				!strings.Contains(q.Expr, `hotel=~"$hotel"`) {
				t.Errorf("panel %q, query %s: does not follow the hotel variable: %s", p.Title, q.RefID, q.Expr)
			}
		}
	}
	if queries < 10 {
		t.Errorf("the dashboard has %d queries; want the daemon's metrics covered", queries)
	}
}

// TestAlertsHaveRunbooks checks what promtool does not: each alert says
// how urgent it is and what to do, and waits before firing.
func TestAlertsHaveRunbooks(t *testing.T) {
	b, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(ruleTests)
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "- alert: ")[1:]
	if len(blocks) < 5 {
		t.Fatalf("%s: %d alerts, want at least 5", rules, len(blocks))
	}
	severity := regexp.MustCompile(`(?m)^\s+severity: (critical|warning|info)$`)
	for _, blk := range blocks {
		name, _, _ := strings.Cut(blk, "\n")
		for _, want := range []string{"\n        expr: ", "\n        for: ", "\n          summary: ", "\n          description: "} {
			if !strings.Contains(blk, want) {
				t.Errorf("alert %s has no %s", name, strings.TrimSpace(strings.TrimSuffix(want, " ")))
			}
		}
		if !severity.MatchString(blk) {
			t.Errorf("alert %s: want a severity label of critical, warning or info", name)
		}
		if !strings.Contains(string(tests), "alertname: "+name+"\n") {
			t.Errorf("alert %s is not tested in %s", name, ruleTests)
		}
	}
}

// declaredMetrics returns the names of the metrics the daemon's source
// declares (the Name of every prometheus.*Opts literal outside tests),
// with the series names a histogram or summary adds.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "deploy") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		consts := stringConsts(f)
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" || !strings.HasSuffix(sel.Sel.Name, "Opts") {
				return true
			}
			var parts [3]string // namespace, subsystem, name
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				if key == nil {
					continue
				}
				i := slices.Index([]string{"Namespace", "Subsystem", "Name"}, key.Name)
				if i < 0 {
					continue
				}
				v, ok := stringValue(kv.Value, consts)
				if !ok {
					// A name built at run time: the live check still sees it.
					t.Logf("%s: metric %s is not a string constant; not read", fset.Position(kv.Pos()), key.Name)
					continue
				}
				parts[i] = v
			}
			full := strings.Join(slices.DeleteFunc(parts[:], func(s string) bool { return s == "" }), "_")
			if full == "" {
				return true
			}
			names[full] = true
			switch sel.Sel.Name {
			case "HistogramOpts":
				names[full+"_bucket"], names[full+"_sum"], names[full+"_count"] = true, true, true
			case "SummaryOpts":
				names[full+"_sum"], names[full+"_count"] = true, true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !names["ticketbridge_cycles_total"] {
		t.Fatalf("found no ticketbridge_cycles_total in the source below %s: the scan is broken (found %v)", root, names)
	}
	return names
}

// stringConsts maps the file's string constants to their values.
func stringConsts(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if v, ok := stringValue(vs.Values[i], nil); ok {
						m[n.Name] = v
					}
				}
			}
		}
	}
	return m
}

func stringValue(e ast.Expr, consts map[string]string) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind == token.STRING {
			s, err := strconv.Unquote(v.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[v.Name]
		return s, ok
	case *ast.BinaryExpr:
		if v.Op == token.ADD {
			a, ok1 := stringValue(v.X, consts)
			b, ok2 := stringValue(v.Y, consts)
			return a + b, ok1 && ok2
		}
	}
	return "", false
}

// referencedMetrics returns every ticketbridge_* name in the files, with
// the files naming it.
func referencedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	refs := map[string][]string{}
	for _, file := range []string{dashboard, rules, ruleTests} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range metricName.FindAllString(string(b), -1) {
			if !slices.Contains(refs[n], file) {
				refs[n] = append(refs[n], file)
			}
		}
	}
	return refs
}

// TestNamesAreDeclared fails when the dashboard or the rules name a metric
// the daemon does not declare: a typo, or a metric renamed in the code.
func TestNamesAreDeclared(t *testing.T) {
	declared := declaredMetrics(t)
	refs := referencedMetrics(t)
	if len(refs) < 10 {
		t.Fatalf("only %d metric names found in the files", len(refs))
	}
	for name, files := range refs {
		switch {
		case declared[name] && pending[name] != "":
			t.Logf("%s is declared now: remove it from the pending list", name)
		case declared[name]:
		case pending[name] != "":
			t.Logf("%s (used in %s) is not exported yet: %s", name, strings.Join(files, ", "), pending[name])
		default:
			t.Errorf("%s names %s, which the daemon does not export", strings.Join(files, ", "), name)
		}
	}
}

// TestLive runs against a Prometheus that has scraped a running, ready
// daemon for a few scrapes and loads alerts.yml: every dashboard query
// must be valid there and return data, every metric the files name must
// have been scraped, and every rule must evaluate without error.
func TestLive(t *testing.T) {
	base := os.Getenv("CI_PROMETHEUS_URL")
	if base == "" {
		t.Skip("CI_PROMETHEUS_URL is not set; deploy/ci-prometheus.sh runs this against a real Prometheus")
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	get := func(path string, q url.Values, out any) {
		t.Helper()
		resp, err := hc.Get(strings.TrimSuffix(base, "/") + path + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Status string          `json:"status"`
			Error  string          `json:"error"`
			Data   json.RawMessage `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatalf("GET %s: %s: %v", path, resp.Status, err)
		}
		if r.Status != "success" {
			t.Errorf("GET %s %v: %s: %s", path, q, resp.Status, r.Error)
			return
		}
		if err := json.Unmarshal(r.Data, out); err != nil {
			t.Fatalf("GET %s: data: %v", path, err)
		}
	}

	var scraped []string
	get("/api/v1/label/__name__/values", url.Values{}, &scraped)
	have := map[string]bool{}
	for _, n := range scraped {
		have[n] = true
	}
	if !have["ticketbridge_cycles_total"] {
		t.Fatalf("Prometheus has scraped no ticketbridge_cycles_total (names: %v)", scraped)
	}

	d := readDashboard(t)
	vars := strings.NewReplacer("$__rate_interval", "1m", "$job", ".*", "$instance", ".*", "$hotel", ".*")
	other := regexp.MustCompile(`\b(?:ticketbridge|process|go)_[a-z0-9_]+\b`)
	want := map[string][]string{} // metric: files naming it
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			expr := vars.Replace(q.Expr)
			var res struct {
				Result []json.RawMessage `json:"result"`
			}
			get("/api/v1/query", url.Values{"query": {expr}}, &res)
			waiting := false
			for _, n := range other.FindAllString(expr, -1) {
				if !slices.Contains(want[n], dashboard) {
					want[n] = append(want[n], dashboard)
				}
				waiting = waiting || pending[n] != ""
			}
			// The daemon is healthy and has been scraped for a while:
			// an empty answer means a misspelt label or value.
			if len(res.Result) == 0 && !waiting {
				t.Errorf("panel %q, query %s: no data from a running daemon: %s", p.Title, q.RefID, expr)
			}
		}
	}
	b, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range other.FindAllString(string(b), -1) {
		if !slices.Contains(want[n], rules) {
			want[n] = append(want[n], rules)
		}
	}
	for n, files := range want {
		file := strings.Join(files, ", ")
		switch {
		case have[n]:
		case pending[n] != "":
			t.Logf("%s (used in %s) was not scraped: not exported yet", n, file)
		default:
			t.Errorf("%s names %s, which Prometheus did not scrape from the daemon", file, n)
		}
	}

	var rulesResp struct {
		Groups []struct {
			Rules []struct {
				Name   string `json:"name"`
				Health string `json:"health"`
				Error  string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	get("/api/v1/rules", url.Values{}, &rulesResp)
	loaded := 0
	for _, g := range rulesResp.Groups {
		for _, r := range g.Rules {
			loaded++
			if r.Health != "ok" {
				t.Errorf("rule %s: health %q, want ok (evaluated without error): %s", r.Name, r.Health, r.Error)
			}
		}
	}
	if loaded == 0 {
		t.Error("Prometheus has loaded no rules")
	}
}
