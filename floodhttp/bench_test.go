package floodhttp

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"testing"

	"github.com/floodgate-go/floodgate"
)

// BenchmarkTransportCPU is RoundTrip's own cost, without a network: Base
// answers each request at once with the same 200 and an empty body, and
// calls the trace's GotConn as http.Transport does.
//
//	base      Base alone
//	guard     Gate.Guard around Base
//	transport the Transport with each Config
func BenchmarkTransportCPU(b *testing.B) {
	resp := &http.Response{StatusCode: 200, Body: http.NoBody, ContentLength: 0}
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		if tr := httptrace.ContextClientTrace(r.Context()); tr != nil && tr.GotConn != nil {
			tr.GotConn(httptrace.GotConnInfo{})
		}
		_ = r.Header.Get(AttemptHeader)
		return resp, nil
	})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://x/", nil)
	newGate := func() *floodgate.Gate {
		g, err := floodgate.New("bench")
		if err != nil {
			b.Fatal(err)
		}
		return g
	}
	b.Run("base", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = base.RoundTrip(req)
		}
	})
	b.Run("guard", func(b *testing.B) {
		g := newGate()
		b.ReportAllocs()
		for b.Loop() {
			_ = g.Guard(req.Context(), func(context.Context) error { _, err := base.RoundTrip(req); return err })
		}
	})
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"transport", Config{}},
		{"transport-noheaders", Config{NoAttemptHeader: true, NoTimeoutHeader: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tc.cfg.Base = base
			t, err := NewTransport(newGate(), tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := t.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
