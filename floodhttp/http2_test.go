package floodhttp

import (
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// chanListener hands the connections sent on conns to an http.Server.
type chanListener struct {
	conns chan net.Conn
	addr  net.Addr
	once  sync.Once
	done  chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l *chanListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *chanListener) Addr() net.Addr { return l.addr }

// goAwayFirstStream plays the server side of an HTTP/2 connection (prior
// knowledge, no TLS) until the client's first HEADERS frame, then answers
// GOAWAY with last stream 0 and NO_ERROR (RFC 9113 §6.8: the stream was
// not processed, so the client may send it again on a new connection) and
// closes the connection.
func goAwayFirstStream(t *testing.T, c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	preface := make([]byte, 24)
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" {
		t.Errorf("preface %q, %v", preface, err)
		return
	}
	frame := func(typ, flags byte, payload []byte) []byte {
		h := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
		return append(h, payload...)
	}
	if _, err := c.Write(frame(0x4, 0, nil)); err != nil { // SETTINGS
		return
	}
	for {
		h := make([]byte, 9)
		if _, err := io.ReadFull(c, h); err != nil {
			t.Errorf("reading a frame header: %v", err)
			return
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			return
		}
		switch typ, flags := h[3], h[4]; {
		case typ == 0x4 && flags&1 == 0: // the client's SETTINGS: ACK it
			c.Write(frame(0x4, 1, nil))
		case typ == 0x1: // HEADERS: the request
			goAway := make([]byte, 8) // last stream 0, NO_ERROR
			binary.BigEndian.PutUint32(goAway[4:], 0)
			c.Write(frame(0x7, 0, goAway))
			time.Sleep(50 * time.Millisecond) // let the client read it before the close
			return
		}
	}
}

// TestTransportCountsHiddenRetriesHTTP2: net/http's HTTP/2 client sends a
// request again, on a new connection, when the server's GOAWAY says the
// stream was not processed. The server here refuses the first connection's
// first stream that way and serves the second connection: the Gate sees one
// attempt, the server two connections, and HiddenRetries counts the
// re-send.
func TestTransportCountsHiddenRetriesHTTP2(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := &chanListener{conns: make(chan net.Conn), addr: ln.Addr(), done: make(chan struct{})}
	var requests, conns atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.ProtoMajor != 2 {
			t.Errorf("request over %s, want HTTP/2", r.Proto)
		}
		io.WriteString(w, "ok")
	})}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetUnencryptedHTTP2(true)
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(served) })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if conns.Add(1) == 1 {
				wg.Go(func() { goAwayFirstStream(t, c) })
				continue
			}
			select {
			case served.conns <- c:
			case <-served.done:
				c.Close()
				return
			}
		}
	})
	defer func() { ln.Close(); srv.Close(); wg.Wait() }()

	base := &http.Transport{}
	base.Protocols = new(http.Protocols)
	base.Protocols.SetUnencryptedHTTP2(true)
	defer base.CloseIdleConnections()
	var hooked atomic.Int32
	attempts := 0
	client, tr := newClient(t, newGate(t, fastRetry), Config{Base: base, OnHiddenRetry: func(k int) { hooked.Add(int32(k)) }})
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	attempts++
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("HTTP/2: %d call, %s, body %q; %d connections, %d requests served, %d hidden retries counted", attempts, resp.Proto, body, conns.Load(), requests.Load(), tr.HiddenRetries())
	if resp.ProtoMajor != 2 || string(body) != "ok" {
		t.Fatalf("%s %q, want HTTP/2 and ok", resp.Proto, body)
	}
	// Connections: 2, or 3 when the client's re-send asks for a connection
	// twice and a dial it then does not use reaches the server (1 in about
	// 400 runs under load, CI's run of 2026-12-05). No request goes on it,
	// so it is no hidden retry: GetConn counted it, GotConn does not.
	if c := conns.Load(); c < 2 || c > 3 || requests.Load() != 1 || tr.HiddenRetries() != 1 || hooked.Load() != 1 {
		t.Errorf("%d connections, %d requests served, %d hidden retries, hook told of %d; want 2 or 3, 1, 1, 1",
			conns.Load(), requests.Load(), tr.HiddenRetries(), hooked.Load())
	}
}

// TestHiddenRetriesCountConnectionsUsed: a hidden retry is a connection
// handed to the request (GotConn), not a connection asked for (GetConn).
// HTTP/2's client asks twice and uses one when a dial loses a race; counted
// by GetConn, that was a hidden retry that never went on the wire (CI's
// failure of 2026-12-05: 2 counted, 1 sent).
func TestHiddenRetriesCountConnectionsUsed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events string // g: GetConn, c: GotConn
		want   int64
	}{
		{"one connection", "gc", 0},
		{"asked twice, used once", "ggc", 0},
		{"re-sent on a second", "gcgc", 1},
		{"re-sent after a lost dial", "gcggc", 1},
		{"re-sent twice", "gcgcgc", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := rtFunc(func(r *http.Request) (*http.Response, error) {
				tr := httptrace.ContextClientTrace(r.Context())
				for _, e := range tc.events {
					switch {
					case e == 'g' && tr.GetConn != nil:
						tr.GetConn("x:80")
					case e == 'c' && tr.GotConn != nil:
						tr.GotConn(httptrace.GotConnInfo{})
					}
				}
				return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
			})
			var hooked atomic.Int32
			client, tr := newClient(t, newGate(t, fastRetry), Config{Base: base, OnHiddenRetry: func(k int) { hooked.Add(int32(k)) }})
			resp, err := client.Get("http://x/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if tr.HiddenRetries() != tc.want || int64(hooked.Load()) != tc.want {
				t.Errorf("%d hidden retries, hook told of %d; want %d", tr.HiddenRetries(), hooked.Load(), tc.want)
			}
		})
	}
}
