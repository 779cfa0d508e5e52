package looptest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Crash is the kit of a crash test: it builds the ticketbridge binary,
// runs each cycle as `ticketbridge once` in a process of its own and
// kills it with SIGKILL at a random moment, while the test's helpdesk
// and its reference server carry on. The moments come from a seeded
// source whose seed the test logs, so that a failure can be replayed
// with [CrashOptions.Seed].
type Crash struct {
	// Rand is the seeded source; the test draws its guests' and agents'
	// moves from it too.
	Rand *rand.Rand

	t        *testing.T
	opts     CrashOptions
	bin      string
	estimate time.Duration
}

// CrashOptions says how the crash test runs the bridge.
type CrashOptions struct {
	// Env is the environment of each `ticketbridge once`, added to the
	// test's own: the guest API, the state file and the adapter's
	// settings.
	Env []string
	// Seed seeds the kill moments; zero means one from the clock. The
	// test logs it either way.
	Seed uint64
	// Estimate is the first guess at how long a cycle runs; the kills
	// fall within the last whole cycle's duration after that.
	Estimate time.Duration
	// AfterKill stands for the packaged unit's RestartSec: how long a
	// helpdesk that finishes a request whose client died is given before
	// the bridge starts again. Zero restarts at once.
	AfterKill time.Duration
}

// NewCrash builds the ticketbridge binary into the test's temporary
// directory and returns the kit.
func NewCrash(t *testing.T, opts CrashOptions) *Crash {
	t.Helper()
	if opts.Seed == 0 {
		opts.Seed = uint64(time.Now().UnixNano())
	}
	if opts.Estimate <= 0 {
		opts.Estimate = 3 * time.Second
	}
	t.Logf("seed %d", opts.Seed)
	bin := filepath.Join(t.TempDir(), "ticketbridge")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/ticketbridge/ticketbridge/cmd/ticketbridge").CombinedOutput(); err != nil {
		t.Fatalf("build ticketbridge: %v\n%s", err, out)
	}
	return &Crash{Rand: rand.New(rand.NewPCG(opts.Seed, 42)), t: t, opts: opts, bin: bin, estimate: opts.Estimate}
}

// Cycle runs `ticketbridge once`, killing it after killAfter when that is
// positive. It reports whether the cycle ran to its end, and how long the
// process ran. A cycle that fails on its own fails the test.
func (c *Crash) Cycle(killAfter time.Duration) (bool, time.Duration) {
	c.t.Helper()
	cmd := exec.CommandContext(c.t.Context(), c.bin, "once")
	cmd.Env = append(append(os.Environ(), "TICKETBRIDGE_LOG_LEVEL=warn", "TICKETBRIDGE_LOG_FORMAT=text"), c.opts.Env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	took := time.Since(begin)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			if c.opts.AfterKill > 0 {
				time.Sleep(c.opts.AfterKill)
			}
			return false, took
		}
	}
	if err != nil {
		c.t.Fatalf("ticketbridge once failed: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "level=ERROR") {
		c.t.Logf("ticketbridge once logged errors:\n%s", out.String())
	}
	return true, took
}

// Run runs cycles cycles, every sixth to its end and the others killed at
// a random moment within the last whole cycle's duration (process start
// included), calling between after each. It fails the test when fewer
// than half were killed before their end, and returns how many were.
func (c *Crash) Run(cycles int, between func()) int {
	c.t.Helper()
	killed := 0
	for i := range cycles {
		kill := time.Duration(0)
		if i%6 != 5 {
			kill = time.Duration(c.Rand.Int64N(int64(c.estimate)*9/10)) + time.Millisecond
		}
		done, took := c.Cycle(kill)
		if done {
			c.estimate = max(took, 100*time.Millisecond)
		} else {
			killed++
		}
		between()
	}
	c.t.Logf("%d cycles, %d killed before their end", cycles, killed)
	if killed < cycles/2 {
		c.t.Errorf("only %d of %d cycles were killed", killed, cycles)
	}
	return killed
}

// Finish runs whole cycles, at most rounds, until check finds nothing
// missing; check counts what is missing and fails the test at a
// duplicate, and at anything missing when final. Finish fails the test
// when the bridge does not catch up.
func (c *Crash) Finish(rounds int, check func(final bool) int) {
	c.t.Helper()
	for i := range rounds {
		c.Cycle(0)
		if check(false) == 0 {
			c.t.Logf("complete after %d whole cycles", i+1)
			check(true)
			return
		}
	}
	check(true)
	c.t.Logf("the last cycle, with its warnings:\n%s", c.run("once", "TICKETBRIDGE_LOG_LEVEL=info"))
	c.t.Logf("status:\n%s", c.run("status"))
	c.t.Fatal("the bridge did not catch up after the crashes")
}

// run runs the bridge's command name to its end and returns what it
// printed: what a failed test shows of why the bridge did not catch up.
func (c *Crash) run(name string, env ...string) string {
	cmd := exec.CommandContext(c.t.Context(), c.bin, name)
	cmd.Env = append(append(append(os.Environ(), "TICKETBRIDGE_LOG_FORMAT=text"), c.opts.Env...), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s(%s: %v)", out, name, err)
	}
	return string(out)
}
