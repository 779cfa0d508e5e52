package state_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/state"
)

func TestLocationKnowsItsKindAndHidesItsPassword(t *testing.T) {
	for v, db := range map[string]bool{
		"/var/lib/ticketbridge/state.db":            false,
		"postgres://tb:s3cret@db.example/tb":        true,
		"host=db user=tb password=s3cret dbname=tb": true,
		"./host=db":       false,
		"ticketbridge.db": false,
		"POSTGRESQL://tb:s3cret@db.example/tb?sslmode=": true,
	} {
		var c struct {
			State state.Location `env:"TICKETBRIDGE_STATE"`
		}
		if err := envconfig.ProcessWith(t.Context(), &envconfig.Config{Target: &c, Lookuper: envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_STATE": v})}); err != nil {
			t.Fatal(err)
		}
		l := c.State
		if l.IsDB() != db || l.IsDB() != state.IsURL(v) || l.Value() != v {
			t.Errorf("%s: IsDB %v, Value %q", v, l.IsDB(), l.Value())
		}
		if (l.Dir() == "") != db {
			t.Errorf("%s: Dir %q", v, l.Dir())
		}
		if s := fmt.Sprintf("%v %s %#v %+v", l, l, l, c); strings.Contains(s, "s3cret") {
			t.Errorf("%s prints its password: %s", v, s)
		}
	}
}
