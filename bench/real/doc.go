// Package real runs floodgate against real downstreams on 127.0.0.1, beside
// the clients a user would use without it: a real Redis (go-redis v9) and a
// net/http server behind an in-process toxiproxy. It is the real-server
// counterpart of the simulator in bench/sim (issue 12: against real
// downstreams the default gate served fewer calls than no protection).
//
// # Model
//
// A trial is a timeline of phases (healthy, a fault, healthy again, ...)
// that each contender runs through, with its own client, under the same
// open-loop load: Rate calls per second, one every 1/Rate whatever the
// completions, each in its own goroutine, each with a Deadline of 2 s. A
// call is counted in the phase in which it started; the next phase starts
// once the fault is gone (the last DEBUG SLEEP returned, the toxic
// removed). Per phase and contender the report gives the successes within
// the deadline (and how many of them ended after the phase: in a fault's
// phase, calls served once the fault was gone), those after it (a client
// that ignores the deadline), the
// calls refused before any attempt reached the downstream (and how long a
// refusal took), the failures, the p99 latency, the peak of attempts in
// flight inside the client, the contender's limit, and after a heal the
// time until the first 100 ms bin whose calls all but 5% succeeded.
//
// Both trials run their contenders side by side, each with its own client
// and pool, under one timeline: every contender meets the same stalls and
// toxics at the same instants, and the same noise of a machine shared with
// other jobs (on 2 cores, run after run of one contender differs more than
// contenders side by side do). The Redis trial's contenders share one
// server, as the services of one Redis do; at 4 × 300 calls/s a healthy
// Redis is far from busy, and during a stall it serves every queued command
// in each gap between two DEBUG SLEEPs, whoever sent it. The HTTP trial
// gives each contender its own proxy to one fast server.
//
// scripts/e2e-real.sh starts the Redis and runs the short form (the test
// in this package, about 45 s); bench/cmd/real runs either form and
// prints the tables.
package real
