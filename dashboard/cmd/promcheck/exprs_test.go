package main

import "testing"

func TestWithBool(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`x > 0.9`, `x > bool 0.9`},
		{`a / b >= 2`, `a / b >= bool 2`},
		{`max(x{state="open"}) == 1`, `max(x{state="open"}) == bool 1`},
		{`x{a!="b"} != 0`, `x{a!="b"} != bool 0`},
		{"a > 1.5\nand on (job, gate)\nb > 1", "a > bool 1.5\nand on (job, gate)\nb > bool 1"},
		{`sum(x > 1) < 3`, `sum(x > 1) < bool 3`},          // nested comparisons are left alone
		{`x{l=~"a|>b"} > bool 1`, `x{l=~"a|>b"} > bool 1`}, // strings and existing bool
		{`rate(x[5m])`, `rate(x[5m])`},
	} {
		if got := withBool(c.in); got != c.want {
			t.Errorf("withBool(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLabelValuesQuery(t *testing.T) {
	for _, c := range []struct{ in, want, label string }{
		{`label_values(floodgate_limit, job)`, `count by (job) (floodgate_limit)`, "job"},
		{`label_values(floodgate_limit{job="x"}, gate)`, `count by (gate) (floodgate_limit{job="x"})`, "gate"},
		{`label_values(job)`, `count by (job) ({job=~".+"})`, "job"},
	} {
		got, label, err := labelValuesQuery(c.in)
		if err != nil || got != c.want || label != c.label {
			t.Errorf("labelValuesQuery(%q) = %q, %q, %v; want %q, %q", c.in, got, label, err, c.want, c.label)
		}
	}
	if _, _, err := labelValuesQuery(`query_result(up)`); err == nil {
		t.Error("query_result: no error")
	}
}

func TestSubstitute(t *testing.T) {
	vals := map[string]string{"job": "api", "gate": "(a|b)", "__rate_interval": "4s"}
	got, err := substitute(`rate(x{job="$job", gate=~"${gate}"}[$__rate_interval]) [[job]]`, vals)
	if want := `rate(x{job="api", gate=~"(a|b)"}[4s]) api`; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if _, err := substitute(`x{job="$jobs"}`, vals); err == nil {
		t.Error("undefined variable: no error")
	}
}

func TestAllValue(t *testing.T) {
	if got, want := allValue([]string{"shipping-quote", "a.b"}), `(a\\.b|shipping-quote)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
