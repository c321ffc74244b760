package floodhttp

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Retry-After in both RFC 9110 forms, against a fixed now: what a Gate
// waits (or, past its deadline, returns as the hint), and what is ignored.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"1", time.Second, true},
		{"120", 2 * time.Minute, true},
		{"007", 7 * time.Second, true},
		{" 5\t", 5 * time.Second, true},
		{"86400", 24 * time.Hour, true},
		{"2147483647", (1<<31 - 1) * time.Second, true},
		{"2147483648", MaxRetryAfter, true},
		{"99999999999999999999999999", MaxRetryAfter, true}, // would overflow int64 seconds and Duration
		{strconv.FormatUint(math.MaxUint64, 10), MaxRetryAfter, true},
		{"Tue, 01 Dec 2026 18:02:00 GMT", 2 * time.Minute, true},    // IMF-fixdate
		{"Tuesday, 01-Dec-26 18:00:30 GMT", 30 * time.Second, true}, // RFC 850
		{"Tue Dec  1 18:00:10 2026", 10 * time.Second, true},        // asctime
		{"Tue, 01 Dec 2026 17:59:59 GMT", 0, true},                  // in the past: 0
		{"Tue, 01 Dec 2026 18:00:00 GMT", 0, true},                  // now: 0
		{"Thu, 01 Jan 1970 00:00:00 GMT", 0, true},                  // long past
		{"Fri, 31 Dec 9999 23:59:59 GMT", MaxRetryAfter, true},      // far future: capped
		{"Wed, 02 Dec 2026 18:00:00 GMT", 24 * time.Hour, true},
		{"", 0, false},
		{"   ", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"0x10", 0, false},
		{"1 2", 0, false},
		{"soon", 0, false},
		{"Tue, 01 Dec 2026 18:02:00 PST", 0, false}, // HTTP-dates are GMT
		{"Tue, 32 Dec 2026 18:02:00 GMT", 0, false},
		{"2026-12-01T18:02:00Z", 0, false}, // RFC 3339 is not an HTTP-date
	} {
		got, ok := ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// ParseRetryAfter never panics, returns a wait in [0, MaxRetryAfter], and
// ignores what is not an RFC 9110 value; delta-seconds it reads exactly.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "2147483648", "99999999999999999999", "Tue, 01 Dec 2026 18:02:00 GMT",
		"Tuesday, 01-Dec-26 18:00:30 GMT", "Tue Dec  1 18:00:10 2026", " 5 ", "1e3", ""} {
		f.Add(s, int64(1796148000))
	}
	f.Fuzz(func(t *testing.T, v string, unix int64) {
		now := time.Unix(unix%(1<<40), 0)
		d, ok := ParseRetryAfter(v, now)
		if d < 0 || d > MaxRetryAfter || !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v", v, d, ok)
		}
		if n, err := strconv.ParseUint(v, 10, 64); err == nil && v[0] != '+' {
			want := MaxRetryAfter
			if n < 1<<31 {
				want = time.Duration(n) * time.Second
			}
			if d != want || !ok {
				t.Fatalf("ParseRetryAfter(%q) = %v, %v; want %v", v, d, ok, want)
			}
		}
		if tv := strings.Trim(v, " \t"); ok && tv[0] > '9' {
			if _, err := http.ParseTime(tv); err != nil {
				t.Fatalf("ParseRetryAfter(%q) accepted what is neither delta-seconds nor an HTTP-date", v)
			}
		}
	})
}
