package redact

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestDSNHidesSecrets(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"host=db port=5432 user=tb password=" + marker + " dbname=tb", "host=db port=5432 user=tb password=xxxxx dbname=tb"},
		{"  password = '" + marker + " x' host=db", "password=xxxxx host=db"},
		{`password='it\'s ` + marker + `' host=/run/postgresql`, "password=xxxxx host=/run/postgresql"},
		{`password=a\ ` + marker + ` host=db`, "password=xxxxx host=db"},
		{"host=db sslmode=require options='-c search_path=" + marker + "' application_name=" + marker, "host=db sslmode=xxxxx options=xxxxx application_name=xxxxx"},
		{"host=db database='my db' sslpassword=" + marker, "host=db database='my db' sslpassword=xxxxx"},
		{"host=db password='" + marker, "(a connection string that does not parse)"},
		{"host=db password=" + marker + " more text=x", "(a connection string that does not parse)"},
		{"host=db " + marker, "(a connection string that does not parse)"},
	} {
		got := DSN(tc.in)
		if got != tc.want {
			t.Errorf("DSN(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, marker) {
			t.Errorf("DSN(%q) = %q shows the secret", tc.in, got)
		}
	}
}

// TestParseDSNReadsAsPgxDoes: the password ParseDSN finds is the one pgx
// sends, however it is quoted or escaped.
func TestParseDSNReadsAsPgxDoes(t *testing.T) {
	for _, dsn := range []string{
		"host=db password=" + marker,
		"host=db password='" + marker + " with spaces'",
		`host=db password='it\'s \\ ` + marker + `'`,
		`host=db password=a\ b\'` + marker,
		"host=db password = " + marker + " \t dbname=tb",
		"host=db password=''",
	} {
		settings, err := ParseDSN(dsn)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", dsn, err)
			continue
		}
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil {
			t.Fatalf("pgx does not parse %q: %v", dsn, err)
		}
		var pw string
		for _, s := range settings {
			if s.Key == "password" {
				pw = s.Value
			}
		}
		if pw != cfg.Password {
			t.Errorf("ParseDSN(%q) reads the password %q, pgx %q", dsn, pw, cfg.Password)
		}
		if back, err := ParseDSN("password=" + quoteDSN(pw)); err != nil || len(back) != 1 || back[0].Value != pw {
			t.Errorf("quoteDSN(%q) = %q reads back as %v, %v", pw, quoteDSN(pw), back, err)
		}
	}
}
