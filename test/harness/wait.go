package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// poll calls cond every interval until it returns true, ctx ends or timeout passes. The
// error names what was awaited and carries the last reason cond gave.
func poll(ctx context.Context, what string, interval, timeout time.Duration, cond func(context.Context) (bool, string)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, reason := cond(ctx)
		if ctx.Err() == nil { // a reason given as the deadline hits is about the deadline
			last = reason
		}
		return ok, nil
	})
	if err == nil {
		return nil
	}
	if last != "" {
		return fmt.Errorf("waiting %s for %s: %w (last: %s)", timeout, what, err, last)
	}
	return fmt.Errorf("waiting %s for %s: %w", timeout, what, err)
}

// waitHTTPS polls url until it answers 200 over TLS verified with caPEM; a nil caPEM
// skips verification (for the self-signed serving certificates of OCM's components).
func waitHTTPS(ctx context.Context, what, url string, caPEM []byte, timeout time.Duration) error {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if caPEM == nil {
		tlsConfig.InsecureSkipVerify = true //nolint:gosec // loopback health check of a self-signed server
	} else {
		tlsConfig.RootCAs = x509.NewCertPool()
		tlsConfig.RootCAs.AppendCertsFromPEM(caPEM)
	}
	return waitHTTP(ctx, what, url, &http.Transport{TLSClientConfig: tlsConfig}, timeout)
}

func waitHTTP(ctx context.Context, what, url string, transport *http.Transport, timeout time.Duration) error {
	if transport == nil {
		transport = &http.Transport{}
	}
	c := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	defer transport.CloseIdleConnections()
	return poll(ctx, what, 200*time.Millisecond, timeout, func(ctx context.Context) (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err.Error()
		}
		resp, err := c.Do(req)
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, url + ": " + resp.Status
	})
}

// waitTLS polls addr until it completes a TLS handshake with a certificate of caPEM for
// 127.0.0.1: the webhook server is then serving with the certificate the hub trusts.
func waitTLS(ctx context.Context, what, addr string, caPEM []byte, timeout time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	return poll(ctx, what, 200*time.Millisecond, timeout, func(context.Context) (bool, string) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, cfg)
		if err != nil {
			return false, err.Error()
		}
		_ = conn.Close()
		return true, ""
	})
}

// waitFile waits until file exists and is not empty.
func waitFile(ctx context.Context, what, file string, timeout time.Duration) error {
	return poll(ctx, what, 200*time.Millisecond, timeout, func(context.Context) (bool, string) {
		st, err := os.Stat(file)
		if err != nil {
			return false, err.Error()
		}
		return st.Size() > 0, file + " is empty"
	})
}

// handedOut remembers the ports given in this program: the kernel may offer a port again
// once its probe listener is closed, before the process it was meant for binds it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("finding a free port on 127.0.0.1: every port offered was already handed out")
}

// freePorts returns n distinct free ports.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// FreeAddress is a free 127.0.0.1 port as host:port for a process of the fleet, never
// handed out twice by this harness; it panics when the machine has none.
func FreeAddress() string {
	port, err := freePort()
	if err != nil {
		panic(err)
	}
	return loopback(port)
}

// waitFor calls cond every 200 ms until it returns true, returns an error (which ends the
// wait with it), ctx ends or timeout passes.
func waitFor(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error)) error {
	var condErr error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		condErr = err
		return ok, err
	})
	switch {
	case condErr != nil:
		return condErr
	case err != nil:
		return fmt.Errorf("waiting %s for %s: %w", timeout, what, err)
	}
	return nil
}
