package testutil

import "testing"

func TestEnvInt(t *testing.T) {
	t.Setenv("TB_TEST_SIZE", "")
	if n := EnvInt(t, "TB_TEST_SIZE", 200); n != 200 {
		t.Errorf("unset: %d, want the default 200", n)
	}
	t.Setenv("TB_TEST_SIZE", "50")
	if n := EnvInt(t, "TB_TEST_SIZE", 200); n != 50 {
		t.Errorf("50: got %d", n)
	}
	for _, bad := range []string{"0", "-3", "ten", "1.5"} {
		t.Setenv("TB_TEST_SIZE", bad)
		ft := &fatalTB{TB: t}
		func() {
			defer func() { _ = recover() }()
			EnvInt(ft, "TB_TEST_SIZE", 200)
		}()
		if ft.msg == "" {
			t.Errorf("%q was taken for a size", bad)
		}
	}
}

// fatalTB records a Fatalf and stops the call, as testing.T would.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func (f *fatalTB) Helper() {}
