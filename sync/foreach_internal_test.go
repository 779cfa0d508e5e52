package sync

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestForEachStartsNothingAfterTheEnd: once a call ended the context (a
// fatal answer, a crash), forEach starts no further call, also one whose
// turn was waiting for that call's slot. It was started before, which made
// the simulator's seeds replay differently now and then: the call after a
// crash was made or not, by the goroutines' timing.
func TestForEachStartsNothingAfterTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var calls atomic.Int32
		forEach(ctx, nil, 1, []int{1, 2, 3}, func(int) {
			calls.Add(1)
			// Returns once forEach waits for the slot (the bubble's
			// clock moves only when every goroutine is blocked).
			time.Sleep(time.Second)
			cancel()
		})
		if n := calls.Load(); n != 1 {
			t.Errorf("%d calls after the first ended the context, want 1", n)
		}
	})
}
