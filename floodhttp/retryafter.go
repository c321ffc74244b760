package floodhttp

import (
	"net/http"
	"strings"
	"time"
)

// MaxRetryAfter is the longest hint [ParseRetryAfter] returns: 2^31
// seconds (68 years), the cap RFC 9111 §1.2.2 sets for delta-seconds.
// Any larger value, in either form, is taken as MaxRetryAfter: longer
// than any deadline, so a Gate ends the call at once with it as the hint.
const MaxRetryAfter = (1 << 31) * time.Second

// ParseRetryAfter parses a Retry-After header value (RFC 9110 §10.2.3):
// delta-seconds (one or more digits) or an HTTP-date in any of the three
// forms http.ParseTime accepts (IMF-fixdate, the obsolete RFC 850 and
// asctime forms), read against now. Surrounding spaces and tabs are
// ignored. It returns the wait, in [0, MaxRetryAfter], and true; a date
// at or before now is 0. It returns 0 and false for an empty value and
// for anything else (a sign, a fraction, a unit, a bad date): a malformed
// hint is ignored. It never panics and never overflows.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		var s int64
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			if s < 1<<31 {
				s = s*10 + int64(c-'0') // at most 2^31·10+9: no overflow
			}
		}
		return time.Duration(min(s, 1<<31)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now) // saturates instead of overflowing
	return min(max(d, 0), MaxRetryAfter), true
}
