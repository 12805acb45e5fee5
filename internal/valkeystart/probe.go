package valkeystart

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/internal/valkeyconf"
)

// prober answers the kubelet's probes (valkeyconf.ReadyPath, AlivePath) by PING through one
// connection to the local server, made at the first probe and again after one that fails
// other than by an error reply.
type prober struct {
	dial    func() (*server, error)
	timeout time.Duration

	mu sync.Mutex
	s  *server
}

// newProber pings the wrapper's local server as its user.
func (w *Wrapper) newProber() *prober {
	return &prober{timeout: w.DialTimeout, dial: func() (*server, error) {
		return dial(w.Addr, w.User, w.Password, w.DialTimeout, w.TLS)
	}}
}

// ping sends PING and returns the reply, or the error: a *valkey.ValkeyError when the
// server answered with one.
func (p *prober) ping(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.s == nil {
		s, err := p.dial()
		if err != nil {
			return "", err
		}
		p.s = s
	}
	out, err := p.s.str(ctx, "PING")
	if err != nil && !answered(err) {
		p.s.close()
		p.s = nil
	}
	return out, err
}

// close drops the connection.
func (p *prober) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.s != nil {
		p.s.close()
		p.s = nil
	}
}

// answered tells whether err is the server's own error reply.
func answered(err error) bool {
	var reply *valkey.ValkeyError
	return errors.As(err, &reply)
}

// handle registers the probes' paths on mux.
func (p *prober) handle(mux *http.ServeMux) {
	mux.HandleFunc(valkeyconf.ReadyPath, func(rw http.ResponseWriter, r *http.Request) {
		out, err := p.ping(r.Context())
		if err == nil && out != "PONG" {
			err = fmt.Errorf("PING answered %q", out)
		}
		reply(rw, err, err == nil)
	})
	mux.HandleFunc(valkeyconf.AlivePath, func(rw http.ResponseWriter, r *http.Request) {
		_, err := p.ping(r.Context())
		reply(rw, err, err == nil || answered(err))
	})
}

// reply writes 200 when ok, 503 otherwise, with err (when set) as the body: the kubelet
// puts the start of the body of a failed probe in the pod's event.
func reply(rw http.ResponseWriter, err error, ok bool) {
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ok {
		rw.WriteHeader(http.StatusServiceUnavailable)
	}
	if err != nil {
		_, _ = fmt.Fprintln(rw, err)
		return
	}
	_, _ = fmt.Fprintln(rw, "ok")
}
