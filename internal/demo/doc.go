// Package demo is the local demo of `ticketbridge demo`: the whole loop on
// one machine with nothing to configure. It owns the reference server
// seeded with the demo hotel and served on a loopback port, the files
// helpdesk in a folder (or the email helpdesk on a local mail server,
// with the team answering by mail), the state file next to it, the engine
// on a clock that moves on a step per cycle, the script it plays
// (Script), and the daemon it keeps running afterwards on request (Keep).
//
// It may import sync, state, guestapi, the reference server
// (guestapi/refserver), the files and email adapters and the plumbing
// under internal/. Nothing but the commands under cmd imports it: the demo is
// an application of the library, not a part of it.
package demo
