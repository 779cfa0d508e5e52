// Package notify tells a person when something needs one: it sends
// notices to chat webhooks (Slack, Microsoft Teams through Workflows,
// Google Chat), to a generic JSON webhook signed like the webhook
// helpdesk's, to ntfy and by email, and it calls a heartbeat URL after
// each cycle.
//
// A condition (a [Key]: hotel, [Kind] and subject) is an episode: it
// fires once when it has held for its kind's delay, repeats at most every
// [Options.Repeat], and resolves once ("back to normal"). Each notice is
// recorded in a [Journal] before it is sent, with a compare-and-set on the
// episode's version, so that replicas sharing a store send it once; a
// notice recorded but not marked sent (a process killed while sending) is
// sent again by the next process that starts, so a kill may repeat that
// one notice, once. Episodes of many hotels with the same kind and cause
// that fire within [Options.GroupWindow] are one notice naming the hotels.
//
// Nothing here blocks its caller: [Notifier.Set], [Notifier.Clear],
// [Notifier.Reconcile] and [Heartbeat.Beat] record what they must and
// hand the sending to goroutines of their own, one per target, each with a
// bounded queue. A failing target is retried with internal/httpretry's
// policy (SMTP too), counted ([Counters]), and delays no other target.
//
// A target's URL is a secret (a webhook URL carries its token): no error,
// log line or String shows more of it than the target's kind and host.
//
// The package is plumbing: it imports no part of the daemon. The store
// implements [Journal]; the daemon reads [Config] with [Load] and builds
// the notifier with [New].
package notify
