// Command podcheck runs in the pods of the harness's own node test and of the end-to-end
// tests that need a pod running: `podcheck serve ADDR` answers 200 on /healthz, after one
// log line naming its pod (its hostname), which tests read back as the pod's logs;
// `podcheck check URL` fetches URL (a Service by its DNS name)
// and then the cluster's API through the kubernetes Service with the pod's
// ServiceAccount token, exiting non-zero with what failed.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

const serviceAccount = "/var/run/secrets/kubernetes.io/serviceaccount/"

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: podcheck serve ADDR | podcheck check URL")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2])
	case "check":
		err = check(os.Args[2])
	default:
		err = fmt.Errorf("unknown command %s", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func serve(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	pod, _ := os.Hostname()
	fmt.Printf("podcheck: pod %s serving on %s\n", pod, addr)
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	return (&http.Server{ReadHeaderTimeout: 5 * time.Second}).Serve(l)
}

func check(url string) error {
	if err := get(http.DefaultClient, url, ""); err != nil {
		return err
	}
	ca, err := os.ReadFile(serviceAccount + "ca.crt")
	if err != nil {
		return err
	}
	token, err := os.ReadFile(serviceAccount + "token")
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	api := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	// The pod's ServiceAccount is bound to read pods in its namespace by the test.
	return get(api, "https://kubernetes.default.svc/api/v1/namespaces/default/pods", string(token))
}

func get(c *http.Client, url, token string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	var last error
	for range 30 {
		resp, err := c.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Printf("GET %s: 200\n", url)
				return nil
			}
			err = fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
		}
		last = err
		// A retry inside the pod (which has no client to watch with): the Service's
		// endpoints and the server behind them come up on their own time.
		time.Sleep(time.Second)
	}
	return last
}
