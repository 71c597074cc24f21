package harness

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
)

// ServiceProxy stands in for cluster DNS for the fleet's processes: an HTTP CONNECT proxy
// on loopback that takes a Service's name (name.namespace.svc:port, as a cluster Secret or
// a flag names it) to the loopback address where the process behind that Service listens.
// A process started with HTTPS_PROXY set to its URL reaches the names through it; Go's HTTP
// and gRPC clients never send a loopback address through a proxy, so everything else goes
// direct. TLS runs end to end through the tunnel, so a certificate is checked against the
// Service's name, as in a cluster.
type ServiceProxy struct {
	// URL is the proxy's address, for HTTPS_PROXY.
	URL      string
	listener net.Listener
	routes   map[string]string
	wg       sync.WaitGroup
}

// StartServiceProxy listens on a free loopback port and tunnels each name of routes
// ("host:port") to its loopback address; any other name is refused (403), so nothing leaves
// the machine.
func StartServiceProxy(routes map[string]string) (*ServiceProxy, error) {
	l, err := net.Listen("tcp", FreeAddress())
	if err != nil {
		return nil, fmt.Errorf("service proxy: %w", err)
	}
	p := &ServiceProxy{URL: "http://" + l.Addr().String(), listener: l, routes: routes}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Close stops accepting; open tunnels end with their connections.
func (p *ServiceProxy) Close() error {
	err := p.listener.Close()
	p.wg.Wait()
	return err
}

func (p *ServiceProxy) serve() {
	defer p.wg.Done()
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return
		}
		go p.tunnel(conn)
	}
}

func (p *ServiceProxy) tunnel(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	reader := bufio.NewReader(conn)
	req, err := http.ReadRequest(reader)
	if err != nil {
		return
	}
	target, ok := p.routes[req.Host]
	if req.Method != http.MethodConnect || !ok {
		_, _ = fmt.Fprintf(conn, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nX-Reason: %s %s is not a Service of the fleet\r\n\r\n", req.Method, req.Host)
		return
	}
	upstream, err := net.Dial("tcp", target)
	if err != nil {
		_, _ = fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer func() { _ = upstream.Close() }()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, reader); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, upstream); done <- struct{}{} }()
	<-done
}
