package metrics

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/floodhttp"
)

// Buckets are the classic histogram bucket upper bounds, in seconds, of
// floodgate_call_duration_seconds and floodgate_attempt_duration_seconds:
// 1 ms to 30 s.
var Buckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// The values of the label side: a Gate's series are "client" (its calls go
// out to a downstream), a floodhttp.Handler's are "server" (it admits the
// requests coming in).
const (
	sideClient = "client"
	sideServer = "server"
)

// Collector is a prometheus.Collector exporting the metrics of every gate
// created with its [Collector.Observe] option, of the floodhttp Transports
// and Handlers given to [Collector.ObserveTransport] and
// [Collector.ObserveHandler] (see the package doc for the list). Create one
// with [NewCollector]; it is safe for concurrent use.
type Collector struct {
	mu         sync.Mutex // guards gates, transports, handlers; taken by Attach, Observe*, Remove* and Collect, never per call
	gates      map[string]*observer
	transports map[string][]*floodhttp.Transport // by gate name
	handlers   map[string]*floodhttp.Handler

	limit, inFlight, peak, rttMin, rttRecent, rttBase, state, tokens *prometheus.Desc
	hiddenRetries, httpShed                                          *prometheus.Desc

	calls, attempts, transitions *prometheus.CounterVec
	callDur, attemptDur          *prometheus.HistogramVec
}

// NewCollector returns a Collector with no gates.
func NewCollector() *Collector {
	gate := []string{"gate", "side"}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("floodgate_"+name, help, append(gate, labels...), nil)
	}
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace:                       "floodgate",
			Name:                            name,
			Help:                            help,
			Buckets:                         Buckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}, gate)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "floodgate", Name: name, Help: help},
			append(gate, labels...))
	}
	return &Collector{
		gates:      map[string]*observer{},
		transports: map[string][]*floodhttp.Transport{},
		handlers:   map[string]*floodhttp.Handler{},
		limit: desc("limit",
			"Current concurrency limit of the adaptive limiter: of the gate (side client, calls) or of the floodhttp.Handler (side server, requests)."),
		inFlight:  desc("in_flight", "Calls (side client) or requests (side server) holding a limiter slot now."),
		peak:      desc("in_flight_peak", "Highest number of calls in flight since the previous scrape."),
		rttMin:    desc("rtt_min_seconds", "Smallest RTT of a success in the limiter's last window with successes (seconds)."),
		rttRecent: desc("rtt_recent_seconds", "Mean RTT of the successes in the limiter's last window with successes (seconds)."),
		rttBase: desc("rtt_baseline_seconds",
			"The limit algorithm's RTT baseline, the no-load RTT it compares windows against (seconds); 0 for algorithms without one."),
		state:  desc("breaker_state", "1 for the circuit breaker's current state, 0 for the others.", "state"),
		tokens: desc("retry_budget_tokens", "Retry budget tokens left; each retry spends 1."),
		calls:  counter("calls_total", "User calls through Guard, by outcome.", "outcome"),
		attempts: counter("attempts_total",
			"Attempts that reached the downstream: a call's first attempt, or a retry.", "attempt"),
		transitions: counter("breaker_transitions_total", "Circuit breaker state changes.", "from", "to"),
		callDur: hist("call_duration_seconds",
			"Duration of user calls that reached the downstream, from the first attempt's start to the return (seconds)."),
		attemptDur: hist("attempt_duration_seconds", "Duration of each attempt at the downstream (seconds)."),
		hiddenRetries: desc("http_hidden_retries_total",
			"Requests that a floodhttp.Transport's Base re-sent on its own within one attempt, unseen by the gate (floodhttp.Transport.HiddenRetries)."),
		httpShed: desc("http_shed_total", "Requests a floodhttp.Handler answered over its limit, with 503 or 429 (floodhttp.Handler.Shed)."),
	}
}

// ObserveTransport exports t's hidden retries ([floodhttp.Transport.HiddenRetries])
// as floodgate_http_hidden_retries_total, labelled with the name of t's
// Gate and side client, summed over the Transports observed on that gate.
// The count is read from t's atomic at scrape time: nothing is added to
// t's requests. The series lasts until [Collector.Remove] of the gate's
// name. It returns an error if t is nil, if c already observes t, or if the
// gate's name is not valid UTF-8.
func (c *Collector) ObserveTransport(t *floodhttp.Transport) error {
	if t == nil {
		return errors.New("metrics: ObserveTransport: the Transport is nil")
	}
	name := t.Gate().Name()
	if !utf8.ValidString(name) {
		return fmt.Errorf("metrics: gate name %q is not valid UTF-8, as Prometheus label values must be", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ts := range c.transports {
		for _, o := range ts {
			if o == t {
				return fmt.Errorf("metrics: ObserveTransport: the collector already observes this Transport (gate %q)", name)
			}
		}
	}
	c.transports[name] = append(c.transports[name], t)
	return nil
}

// ObserveHandler exports h, a floodhttp server middleware, under the gate
// label name and side server: its limiter's gauges (floodgate_limit,
// floodgate_in_flight, floodgate_in_flight_peak, floodgate_rtt_*_seconds)
// and its sheds ([floodhttp.Handler.Shed]) as floodgate_http_shed_total.
// All are read from h's atomics at scrape time: nothing is added to h's
// requests. name may equal a gate's (the side label tells them apart). It
// returns an error if h is nil, name is not valid UTF-8, or c already
// exports a Handler named name.
func (c *Collector) ObserveHandler(name string, h *floodhttp.Handler) error {
	switch {
	case h == nil:
		return errors.New("metrics: ObserveHandler: the Handler is nil")
	case !utf8.ValidString(name):
		return fmt.Errorf("metrics: handler name %q is not valid UTF-8, as Prometheus label values must be", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.handlers[name]; dup {
		return fmt.Errorf("metrics: the collector already exports a Handler named %q", name)
	}
	c.handlers[name] = h
	return nil
}

// RemoveHandler stops exporting the Handler observed as name; it reports
// whether c exported it.
func (c *Collector) RemoveHandler(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.handlers[name]
	delete(c.handlers, name)
	return ok
}

// Observe returns the option that makes [floodgate.New] export the new gate
// through c. Pass a fresh Observe() to each gate: New fails if the option's
// observer is already attached to another gate, or if c already exports a
// gate of the same name.
func (c *Collector) Observe() floodgate.Option {
	return floodgate.WithObserver(&observer{c: c})
}

// Remove stops exporting the gate named name and the Transports observed
// on it, and deletes their series; it reports whether c exported any of
// them. A gate that keeps running after Remove still updates its (now
// unexported) counters. A Handler of the same name stays: see
// [Collector.RemoveHandler].
func (c *Collector) Remove(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock() // held across the deletes: a gate re-added under name keeps its series
	_, transports := c.transports[name]
	delete(c.transports, name)
	if _, ok := c.gates[name]; !ok {
		return transports
	}
	delete(c.gates, name)
	c.calls.DeletePartialMatch(prometheus.Labels{"gate": name})
	c.attempts.DeletePartialMatch(prometheus.Labels{"gate": name})
	c.transitions.DeletePartialMatch(prometheus.Labels{"gate": name})
	c.callDur.DeleteLabelValues(name, sideClient)
	c.attemptDur.DeleteLabelValues(name, sideClient)
	return true
}

// Describe sends the descriptors of every metric c exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.limit, c.inFlight, c.peak, c.rttMin, c.rttRecent, c.rttBase, c.state, c.tokens,
		c.hiddenRetries, c.httpShed} {
		ch <- d
	}
	c.calls.Describe(ch)
	c.attempts.Describe(ch)
	c.transitions.Describe(ch)
	c.callDur.Describe(ch)
	c.attemptDur.Describe(ch)
}

// Collect reads each gate's and Handler's gauges and the floodhttp
// counters from their atomics and sends them with the counters and
// histograms. It resets floodgate_in_flight_peak's period.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	gates := make([]*floodgate.Gate, 0, len(c.gates))
	for _, o := range c.gates {
		gates = append(gates, o.gate)
	}
	hidden := make(map[string]int64, len(c.transports))
	for name, ts := range c.transports {
		for _, t := range ts {
			hidden[name] += t.HiddenRetries()
		}
	}
	handlers := make(map[string]*floodhttp.Handler, len(c.handlers))
	for name, h := range c.handlers {
		handlers[name] = h
	}
	c.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	limiter := func(l *adaptive.Limiter, name, side string) {
		gauge(c.limit, float64(l.Limit()), name, side)
		gauge(c.inFlight, float64(l.InFlight()), name, side)
		gauge(c.peak, float64(l.TakePeakInFlight()), name, side)
		gauge(c.rttMin, l.MinRTT().Seconds(), name, side)
		gauge(c.rttRecent, l.RecentRTT().Seconds(), name, side)
		gauge(c.rttBase, l.BaselineRTT().Seconds(), name, side)
	}
	for _, g := range gates {
		name := g.Name()
		limiter(g.Limiter(), name, sideClient)
		s := g.Breaker().State()
		for _, st := range states {
			v := 0.0
			if st == s {
				v = 1
			}
			gauge(c.state, v, name, sideClient, stateLabel(st))
		}
		gauge(c.tokens, g.Budget().Tokens(), name, sideClient)
	}
	for name, n := range hidden {
		ch <- prometheus.MustNewConstMetric(c.hiddenRetries, prometheus.CounterValue, float64(n), name, sideClient)
	}
	for name, h := range handlers {
		limiter(h.Limiter(), name, sideServer)
		ch <- prometheus.MustNewConstMetric(c.httpShed, prometheus.CounterValue, float64(h.Shed()), name, sideServer)
	}
	c.calls.Collect(ch)
	c.attempts.Collect(ch)
	c.transitions.Collect(ch)
	c.callDur.Collect(ch)
	c.attemptDur.Collect(ch)
}

var states = [...]breaker.State{breaker.Closed, breaker.HalfOpen, breaker.Open}

// transitions are the state changes a breaker makes, pre-created at 0.
var transitions = [...][2]breaker.State{
	{breaker.Closed, breaker.Open},
	{breaker.Open, breaker.HalfOpen},
	{breaker.HalfOpen, breaker.Closed},
	{breaker.HalfOpen, breaker.Open},
}

// stateLabel is the state's label value: Prometheus style, with "_".
func stateLabel(s breaker.State) string {
	if s == breaker.HalfOpen {
		return "half_open"
	}
	return s.String()
}

// observer is one gate's [floodgate.Observer]: the gate's counter and
// histogram children, resolved once in Attach so that no call looks them up.
type observer struct {
	c    *Collector
	gate *floodgate.Gate

	calls       [len(floodgate.Outcomes)]prometheus.Counter
	attempts    [2]prometheus.Counter // first, retry
	transitions [len(transitions)]prometheus.Counter
	callDur     prometheus.Observer
	attemptDur  prometheus.Observer
}

var errAttached = errors.New("metrics: this Observe() option is already attached to a gate; call Observe() once per gate")

// Attach registers g with the collector; see [floodgate.Observer].
func (o *observer) Attach(g *floodgate.Gate) error {
	c, name := o.c, g.Name()
	c.mu.Lock() // also guards o.gate: two New calls may share one option
	defer c.mu.Unlock()
	if o.gate != nil {
		return errAttached
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("metrics: gate name %q is not valid UTF-8, as Prometheus label values must be", name)
	}
	if _, dup := c.gates[name]; dup {
		return fmt.Errorf("metrics: the collector already exports a gate named %q", name)
	}
	o.gate = g
	for i, oc := range floodgate.Outcomes {
		o.calls[i] = c.calls.WithLabelValues(name, sideClient, oc.String())
	}
	o.attempts[0] = c.attempts.WithLabelValues(name, sideClient, "first")
	o.attempts[1] = c.attempts.WithLabelValues(name, sideClient, "retry")
	for i, t := range transitions {
		o.transitions[i] = c.transitions.WithLabelValues(name, sideClient, stateLabel(t[0]), stateLabel(t[1]))
	}
	o.callDur = c.callDur.WithLabelValues(name, sideClient)
	o.attemptDur = c.attemptDur.WithLabelValues(name, sideClient)
	c.gates[name] = o
	return nil
}

// Attempt counts an attempt and observes its RTT.
func (o *observer) Attempt(retry bool, rtt time.Duration) {
	i := 0
	if retry {
		i = 1
	}
	o.attempts[i].Inc()
	o.attemptDur.Observe(rtt.Seconds())
}

// Call counts a user call by outcome and observes its duration if it
// reached the downstream.
func (o *observer) Call(oc floodgate.Outcome, attempts int, d time.Duration) {
	if int(oc) < len(o.calls) {
		o.calls[oc].Inc()
	}
	if attempts > 0 {
		o.callDur.Observe(d.Seconds())
	}
}

// StateChange counts a breaker transition.
func (o *observer) StateChange(from, to breaker.State) {
	for i, t := range transitions {
		if t[0] == from && t[1] == to {
			o.transitions[i].Inc()
			return
		}
	}
}
