package httpretry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestBackoffCeilingDoublesAndCaps(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	want := []time.Duration{100, 100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		attempt := i // attempt 0 counts as 1
		if got := b.Ceiling(attempt); got != w*time.Millisecond {
			t.Errorf("Ceiling(%d) = %s, want %s", attempt, got, w*time.Millisecond)
		}
	}
	if got := b.Ceiling(1 << 30); got != time.Second {
		t.Errorf("Ceiling(huge) = %s, want the cap 1s", got)
	}
	huge := Backoff{Base: time.Duration(1<<62 + 1), Max: time.Duration(1<<63 - 1)}
	for attempt := 1; attempt < 100; attempt++ {
		if got := huge.Ceiling(attempt); got <= 0 {
			t.Fatalf("Ceiling(%d) overflowed to %s", attempt, got)
		}
	}
}

func TestBackoffZeroValueUsesDefaults(t *testing.T) {
	var b Backoff
	if got := b.Ceiling(1); got != DefaultBackoffBase {
		t.Errorf("Ceiling(1) = %s, want %s", got, DefaultBackoffBase)
	}
	if got := b.Ceiling(100); got != DefaultBackoffMax {
		t.Errorf("Ceiling(100) = %s, want %s", got, DefaultBackoffMax)
	}
	if b.Ceiling(3) != DefaultBackoff().Ceiling(3) {
		t.Error("zero Backoff differs from DefaultBackoff")
	}
}

func TestBackoffDelayIsJitteredBelowCeiling(t *testing.T) {
	for _, tc := range []struct {
		r    float64
		want time.Duration
	}{
		{0, 0},
		{0.5, 200 * time.Millisecond},
		{0.25, 100 * time.Millisecond},
	} {
		b := Backoff{Base: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return tc.r }}
		if got := b.Delay(3); got != tc.want {
			t.Errorf("Rand %v: Delay(3) = %s, want %s", tc.r, got, tc.want)
		}
	}
	// Out-of-contract jitter sources never push a wait past the ceiling.
	for _, r := range []float64{1, 7, -1} {
		b := Backoff{Base: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return r }}
		if got := b.Delay(2); got < 0 || got >= 200*time.Millisecond {
			t.Errorf("Rand %v: Delay(2) = %s, want within [0, 200ms)", r, got)
		}
	}
	// The default jitter source stays below the ceiling too.
	b := Backoff{Base: time.Millisecond, Max: 8 * time.Millisecond}
	for i := 0; i < 1000; i++ {
		if got := b.Delay(4); got < 0 || got >= 8*time.Millisecond {
			t.Fatalf("Delay(4) = %s, want within [0, 8ms)", got)
		}
	}
}

func TestStatusClassCoversEveryStatus(t *testing.T) {
	for code := 100; code < 600; code++ {
		want := Permanent
		switch {
		case code/100 == 2:
			want = Success
		case code == 401 || code == 403:
			want = Auth
		case code == 408 || code == 425 || code == 429 || code/100 == 5:
			want = Retryable
		}
		if got := StatusClass(code); got != want {
			t.Errorf("StatusClass(%d) = %s, want %s", code, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		value  string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"120", 120 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"-3", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"99999999999999999999", 0, false}, // does not fit an int64
		{"9223372036854775807", time.Duration(9223372036) * time.Second, true},
	} {
		h := http.Header{}
		if tc.value != "" {
			h.Set("Retry-After", tc.value)
		}
		got, ok := RetryAfter(h, now)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("RetryAfter(%q) = %s, %v; want %s, %v", tc.value, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), 0); err != nil {
		t.Errorf("Sleep(0) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(cancelled, 1h) = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Errorf("Sleep(1ns) = %v, want nil", err)
	}
}

func ExampleBackoff() {
	b := Backoff{Base: time.Second, Max: 10 * time.Second, Rand: func() float64 { return 0.5 }}
	for attempt := 1; attempt <= 5; attempt++ {
		fmt.Println(b.Ceiling(attempt), b.Delay(attempt))
	}
	// Output:
	// 1s 500ms
	// 2s 1s
	// 4s 2s
	// 8s 4s
	// 10s 5s
}

func BenchmarkBackoffDelay(b *testing.B) {
	bo := DefaultBackoff()
	for i := 0; b.Loop(); i++ {
		_ = bo.Delay(i%10 + 1)
	}
}
