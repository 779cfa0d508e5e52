package envvar_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/envvar"
)

type Inner struct {
	Timeout time.Duration `env:"TIMEOUT"`
}

// Named is a field whose decoder names the variable in its errors.
type Named map[string]string

func (n *Named) EnvDecode(s string) error {
	if s == "bad" {
		return errors.New("X_NAMED: want department=queue")
	}
	return nil
}

type config struct {
	Count int   `env:"X_COUNT"`
	Named Named `env:"X_NAMED"`
	Inner
	Nested Inner `env:", prefix=X_NESTED_"`
}

func load(t *testing.T, prefix string, vars map[string]string) error {
	t.Helper()
	env := envconfig.MapLookuper(vars)
	var c config
	err := envconfig.ProcessWith(t.Context(), &envconfig.Config{Target: &c, Lookuper: envconfig.PrefixLookuper(prefix, env)})
	if err == nil {
		t.Fatalf("%v: no error", vars)
	}
	return envvar.Explain(err, &c, env, prefix)
}

func TestExplainNamesTheVariableAndItsValue(t *testing.T) {
	err := load(t, "", map[string]string{"X_COUNT": "four"})
	if got, want := err.Error(), `X_COUNT="four": `; !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want it to start with %q", got, want)
	}
	if !errors.Is(err, strconv.ErrSyntax) {
		t.Errorf("%v: the cause is not kept", err)
	}
}

func TestExplainFollowsNestedStructsAndPrefixes(t *testing.T) {
	for name, c := range map[string]struct {
		prefix string
		vars   map[string]string
		want   string
	}{
		"embedded":        {"P_", map[string]string{"P_TIMEOUT": "soon"}, `P_TIMEOUT="soon": `},
		"prefixed nested": {"P_", map[string]string{"P_X_NESTED_TIMEOUT": "later"}, `P_X_NESTED_TIMEOUT="later": `},
	} {
		t.Run(name, func(t *testing.T) {
			if got := load(t, c.prefix, c.vars).Error(); !strings.HasPrefix(got, c.want) {
				t.Errorf("got %q, want it to start with %q", got, c.want)
			}
		})
	}
}

func TestExplainLeavesOtherErrorsAlone(t *testing.T) {
	err := errors.New("something else")
	if got := envvar.Explain(err, &config{}, nil, ""); got != err {
		t.Errorf("got %v, want the error unchanged", got)
	}
	if envvar.Explain(nil, &config{}, nil, "") != nil {
		t.Error("a nil error is explained")
	}
}

func TestExplainKeepsADecoderErrorThatNamesTheVariable(t *testing.T) {
	err := load(t, "", map[string]string{"X_NAMED": "bad"})
	if got, want := err.Error(), "X_NAMED: want department=queue"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
