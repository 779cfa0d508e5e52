package archtest

// Package paths here are relative to the module: "sync", "adapters/rt".
// A pattern is a path, a path ending in "/..." (the package and every one
// below it), "..." (every package), or a path.Match pattern ("adapters/*/*fake").

// appParts are the application's parts under internal/: they wire the
// engine into a daemon, so they sit above it and nothing below may use them.
var appParts = []string{
	"internal/config/...",
	"internal/bridge/...",
	"internal/lease/...",
	"internal/fleet/...",
	"internal/telemetry/...",
	"internal/statuspage/...",
}

// plumbing are the internal packages that any layer may use: they import
// nothing of the module but each other.
var plumbing = []string{
	"internal/atomicfile",
	"internal/gopool",
	"internal/hmacsig",
	"internal/httpretry",
	"internal/httpserve",
	"internal/httpx",
	"internal/redact",
	"internal/safefile",
	"internal/secretfile",
	"internal/smtpsend",
	"internal/testutil",
	"internal/version",
}

// testKits are packages for tests and test fakes only.
var testKits = []string{
	"internal/testutil",
	"internal/looptest/...",
	"internal/lease/leasetest",
	"internal/fleet/fleettest",
	"internal/mailtest",
	"state/statetest",
	"guestapi/refserver/refservertest",
	"adapters/adaptertest/...",
	"adapters/*/*fake",
}

// rules are the dependency rules. A rule's deny patterns may name packages
// that do not exist yet: the rule then already holds for them.
var rules = []rule{
	{
		name: "adapters",
		from: []string{"adapters/..."},
		deny: join([]string{"sync/...", "state/...", "cmd/..."}, appParts),
		why: "an adapter knows the Helpdesk interface only, not the engine, the store or the daemon around it; " +
			"its tests may drive the engine through the end-to-end kit",
	},
	{
		name:  "state",
		from:  []string{"state/..."},
		deny:  join([]string{"sync/...", "adapters/...", "cmd/..."}, appParts),
		tests: true,
		why:   "the store is below the engine and knows no helpdesk",
	},
	{
		name:  "sync",
		from:  []string{"sync/..."},
		deny:  join([]string{"cmd/..."}, appParts),
		tests: true,
		why:   "the engine is below the daemon's parts: cmd -> internal -> sync",
	},
	{
		name:  "guestapi",
		from:  []string{"guestapi/..."},
		deny:  join([]string{"sync/...", "state/...", "adapters/...", "cmd/..."}, appParts),
		tests: true,
		why:   "the API's client and reference server know the API only, not the bridge",
	},
	{
		name: "statuspage",
		from: []string{"internal/statuspage/..."},
		deny: []string{"cmd/...", "internal/config/...", "internal/bridge/...", "internal/lease/...",
			"internal/fleet/...", "internal/telemetry/..."},
		tests: true,
		why:   "the status page reads a hotel's state and cycles; the daemon's parts that serve it use it, not the reverse",
	},
	{
		name: "config",
		from: []string{"internal/config/..."},
		deny: []string{"cmd/...", "internal/bridge/...", "internal/lease/...", "internal/fleet/...",
			"internal/telemetry/..."},
		tests: true,
		why:   "the configuration is read and checked before anything runs; the running parts are given it, it knows none of them",
	},
	{
		name:  "telemetry",
		from:  []string{"internal/telemetry/..."},
		deny:  []string{"cmd/...", "internal/config/...", "internal/bridge/...", "internal/lease/...", "internal/fleet/..."},
		tests: true,
		why:   "telemetry is given its settings and its page by the daemon that serves it; it knows neither the env files nor the parts that run hotels",
	},
	{
		name:  "bridge",
		from:  []string{"internal/bridge/..."},
		deny:  []string{"cmd/...", "internal/lease/...", "internal/fleet/...", "internal/telemetry/..."},
		tests: true,
		why:   "a bridge is one hotel wired; what leases it, runs many of them or reports on them sits above it",
	},
	{
		name:  "lease",
		from:  []string{"internal/lease"},
		deny:  []string{"cmd/...", "internal/config/...", "internal/bridge/...", "internal/fleet/...", "internal/telemetry/..."},
		tests: true,
		why:   "a keeper renews leases on its own goroutine and balances through the Balancer it is given; what runs the hotels sits above it",
	},
	{
		name: "fleet",
		from: []string{"sync/...", "state/...", "adapters/...", "guestapi/...", "internal/config/...", "internal/bridge/...",
			"internal/lease/...", "internal/telemetry/...", "internal/statuspage/...", "internal/looptest/..."},
		deny:  []string{"internal/fleet/..."},
		tests: true,
		why:   "the fleet is the top of the daemon's parts: only the commands run it",
	},
	{
		name:  "looptest",
		from:  []string{"internal/looptest/..."},
		deny:  join([]string{"cmd/..."}, appParts),
		tests: true,
		why:   "the end-to-end kit runs the engine as an adapter's test needs it, not the daemon",
	},
	{
		name: "demo",
		from: []string{"internal/demo/..."},
		deny: join([]string{"cmd/...", "internal/looptest/...", "adapters/memory/...", "adapters/rt/...",
			"adapters/saas/...", "adapters/zendesk/...", "adapters/freshdesk/...", "adapters/zammad/...",
			"adapters/webhook/..."}, appParts),
		tests: true,
		why: "the demo plays the library on one machine: the engine, a state file, the reference server and " +
			"the files adapter, or the email one on a local mail server; not the daemon's parts, nor another helpdesk",
	},
	{
		name:  "demo users",
		from:  []string{"adapters/...", "deploy/...", "guestapi/...", "internal/...", "state/...", "sync/..."},
		deny:  []string{"internal/demo/..."},
		tests: true,
		why:   "the demo is an application of the library: only the commands run it",
	},
	{
		name: "check",
		from: []string{"internal/check/..."},
		deny: []string{"cmd/...", "internal/fleet/...", "internal/lease/...", "internal/telemetry/...",
			"internal/demo/...", "internal/looptest/..."},
		tests: true,
		why: "check judges the configuration, the API, the helpdesk and the state as the daemon would find them at start; " +
			"it runs none of the daemon's parts (of the bridge it reads the status snapshot only)",
	},
	{
		name:  "check users",
		from:  []string{"adapters/...", "deploy/...", "guestapi/...", "internal/...", "state/...", "sync/..."},
		deny:  []string{"internal/check/..."},
		tests: true,
		why:   "check is a command's work: only the commands run it",
	},
	{
		name:  "notify",
		from:  []string{"internal/notify/..."},
		only:  join(plumbing, []string{"internal/envvar", "internal/mailtest"}),
		tests: true,
		why:   "the notifications are told of conditions by the daemon and keep their episodes through a Journal the store implements; they know none of the daemon's parts",
	},
	{
		name: "plumbing",
		from: plumbing,
		only: plumbing,
		why:  "plumbing is used by every layer, so it uses none of them",
	},
	{
		name:  "cmd",
		from:  []string{"..."},
		deny:  []string{"cmd/..."},
		tests: true,
		why:   "the commands are the top: what they share lives under internal/",
	},
	{
		name: "binaries",
		from: []string{"cmd/...", "adapters/webhook/cmd/..."},
		deny: testKits,
		why:  "a binary links no test kit or fake",
	},
}

// allowed are today's violations, each to be removed by the step that
// ends it. The test fails when one is no longer needed: delete it then.
// Do not add to it; change the code, or the rule and the design with it.
var allowed = []allowance{}

// contextValues are the only values the module's production code puts
// in a context.Context, by package and key type, each with why it belongs
// to the call rather than to a client. Policy does not travel in a
// context: the request slots and the lease guard are part of the HTTP
// clients (package internal/httpx), given when they are built. The test
// fails on a value not listed, and on a listed one that is gone: delete
// it then.
var contextValues = map[string]map[string]string{
	"internal/httpretry": {
		"maxWaitKey": "the longest wait of the calls of one cycle, set by the engine on the cycle's context: a bound of the call, as a deadline is",
	},
}

// wireFiles are the files of package guestapi that hold the wire types
// (the JSON shapes, the statuses, the error codes and body): the only part
// of guestapi the reference server may use.
var wireFiles = []string{"types.go", "errors.go"}

func join(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}
