// Package fakeroute is a real aggregated API server for route.openshift.io/v1, standing in
// for openshift-apiserver in tests: HTTPS on 127.0.0.1, discovery, Routes in memory, and
// /openapi/v2 and /openapi/v3 documents shaped like openshift-apiserver's, including the
// group-version discovery path /apis/route.openshift.io/v1/ without which the duplicate
// CRD trap never reproduces.
package fakeroute

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gitops-addon/gitops-addon/test/pki"
)

// ServedByAnnotation marks every Route this server returns, so a test can tell that the
// aggregated server (and not a CRD) answered.
const ServedByAnnotation = "fakeroute.gitops-addon.test/served-by"

// ServiceHost is the name the aggregator verifies the serving certificate for.
const ServiceHost = "api.openshift-apiserver.svc"

// Server is the stand-in aggregated API server.
type Server struct {
	// CA signed the serving certificate; its PEM is the APIService caBundle.
	CA   *pki.CA
	Port int

	listener net.Listener
	http     *http.Server

	mu     sync.Mutex
	routes map[string]map[string]any // namespace/name -> Route object

	aggregatorV2Downloads atomic.Int64
}

// Start serves on a free port of 127.0.0.1.
func Start() (*Server, error) {
	ca, err := pki.NewCA("fakeroute-ca")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{CA: ca, listener: l, Port: l.Addr().(*net.TCPAddr).Port, routes: map[string]map[string]any{}}
	if err := s.serve(); err != nil {
		_ = l.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) serve() error {
	pair, err := s.CA.Serving(ServiceHost, ServiceHost)
	if err != nil {
		return err
	}
	cert, err := pair.TLS()
	if err != nil {
		return fmt.Errorf("loading the serving certificate: %w", err)
	}
	s.http = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	l := s.listener
	go func() { _ = s.http.ServeTLS(l, "", "") }()
	return nil
}

// Stop stops serving: the APIService becomes unavailable.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.http.Shutdown(ctx)
}

// Restart serves again on the same port after Stop.
func (s *Server) Restart() error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port))
	if err != nil {
		return err
	}
	s.listener = l
	return s.serve()
}

// AggregatorV2Downloads counts the complete /openapi/v2 documents served to the
// kube-apiserver's aggregator (X-Remote-User: system:aggregator), counted once written.
// Revalidations answered 304 do not count: a kube-apiserver that has just started holds no
// ETag and downloads the document, while one that is shutting down can still revalidate,
// so only a download tells a test that the new process has the aggregated spec.
func (s *Server) AggregatorV2Downloads() int64 { return s.aggregatorV2Downloads.Load() }

// AddRoute stores a Route directly, as if created through the API.
func (s *Server) AddRoute(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[namespace+"/"+name] = route(namespace, name)
}

func route(namespace, name string) map[string]any {
	return map[string]any{
		"apiVersion": "route.openshift.io/v1", "kind": "Route",
		"metadata": map[string]any{"name": name, "namespace": namespace, "resourceVersion": "1",
			"uid": "fake-" + namespace + "-" + name, "annotations": map[string]any{ServedByAnnotation: "aggregated"}},
		"spec": map[string]any{"to": map[string]any{"kind": "Service", "name": name}},
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{apiGroup()}})
	})
	mux.HandleFunc("GET /apis/route.openshift.io", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, apiGroup()) })
	mux.HandleFunc("GET /apis/route.openshift.io/v1", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, resourceList()) })
	mux.HandleFunc("GET /openapi/v2", s.openAPIV2)
	mux.HandleFunc("GET /openapi/v3", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"paths": map[string]any{"apis/route.openshift.io/v1": map[string]any{
			"serverRelativeURL": "/openapi/v3/apis/route.openshift.io/v1?hash=" + v3Hash}}})
	})
	mux.HandleFunc("GET /openapi/v3/apis/route.openshift.io/v1", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, v3Document) })
	mux.HandleFunc("GET /apis/route.openshift.io/v1/routes", s.list(""))
	mux.HandleFunc("GET /apis/route.openshift.io/v1/namespaces/{ns}/routes", func(w http.ResponseWriter, r *http.Request) { s.list(r.PathValue("ns"))(w, r) })
	mux.HandleFunc("POST /apis/route.openshift.io/v1/namespaces/{ns}/routes", s.create)
	mux.HandleFunc("GET /apis/route.openshift.io/v1/namespaces/{ns}/routes/{name}", s.get)
	mux.HandleFunc("PUT /apis/route.openshift.io/v1/namespaces/{ns}/routes/{name}", s.update)
	mux.HandleFunc("DELETE /apis/route.openshift.io/v1/namespaces/{ns}/routes/{name}", s.delete)
	return mux
}

func apiGroup() map[string]any {
	gv := map[string]any{"groupVersion": "route.openshift.io/v1", "version": "v1"}
	return map[string]any{"kind": "APIGroup", "apiVersion": "v1", "name": "route.openshift.io", "versions": []any{gv}, "preferredVersion": gv}
}

func resourceList() map[string]any {
	return map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "route.openshift.io/v1", "resources": []any{
		map[string]any{"name": "routes", "singularName": "route", "namespaced": true, "kind": "Route",
			"verbs": []any{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
		map[string]any{"name": "routes/status", "singularName": "", "namespaced": true, "kind": "Route", "verbs": []any{"get", "patch", "update"}},
	}}
}

func (s *Server) list(namespace string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
			writeJSON(w, http.StatusMethodNotAllowed, status(405, "MethodNotAllowed", "watch is not served by the fake"))
			return
		}
		s.mu.Lock()
		var keys []string
		for k := range s.routes {
			if namespace == "" || strings.HasPrefix(k, namespace+"/") {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		items := make([]any, 0, len(keys))
		for _, k := range keys {
			items = append(items, s.routes[k])
		}
		s.mu.Unlock()
		writeJSON(
			w,
			200,
			map[string]any{"apiVersion": "route.openshift.io/v1", "kind": "RouteList", "metadata": map[string]any{"resourceVersion": "1"}, "items": items},
		)
	}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	obj, ok := s.routes[r.PathValue("ns")+"/"+r.PathValue("name")]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, 404, status(404, "NotFound", fmt.Sprintf("routes.route.openshift.io %q not found", r.PathValue("name"))))
		return
	}
	writeJSON(w, 200, obj)
}

// create stores the posted Route as it is, with the fields the server owns set (the
// GitOps operator reads back what it wrote).
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	obj, ok := decodeRoute(w, r)
	if !ok {
		return
	}
	key := r.PathValue("ns") + "/" + name(obj)
	s.mu.Lock()
	if _, exists := s.routes[key]; exists {
		s.mu.Unlock()
		writeJSON(w, 409, status(409, "AlreadyExists", fmt.Sprintf("routes.route.openshift.io %q already exists", name(obj))))
		return
	}
	s.routes[key] = serverFields(obj, route(r.PathValue("ns"), name(obj)), 1)
	out := s.routes[key]
	s.mu.Unlock()
	writeJSON(w, 201, out)
}

// update replaces a stored Route (PUT), as an update of every field but the server's.
func (s *Server) update(w http.ResponseWriter, r *http.Request) {
	obj, ok := decodeRoute(w, r)
	if !ok {
		return
	}
	key := r.PathValue("ns") + "/" + r.PathValue("name")
	s.mu.Lock()
	current, exists := s.routes[key]
	if !exists {
		s.mu.Unlock()
		writeJSON(w, 404, status(404, "NotFound", fmt.Sprintf("routes.route.openshift.io %q not found", r.PathValue("name"))))
		return
	}
	version := 1
	if meta, _ := current["metadata"].(map[string]any); meta != nil {
		fmt.Sscan(fmt.Sprint(meta["resourceVersion"]), &version)
	}
	s.routes[key] = serverFields(obj, current, version+1)
	out := s.routes[key]
	s.mu.Unlock()
	writeJSON(w, 200, out)
}

func decodeRoute(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	var obj map[string]any
	if err := json.NewDecoder(r.Body).Decode(&obj); err != nil || name(obj) == "" {
		writeJSON(w, 400, status(400, "BadRequest", "a Route needs metadata.name"))
		return nil, false
	}
	return obj, true
}

func name(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	n, _ := meta["name"].(string)
	return n
}

// serverFields sets on obj what the server owns: apiVersion and kind, namespace, uid,
// resourceVersion and the served-by annotation, taken from base.
func serverFields(obj, base map[string]any, version int) map[string]any {
	baseMeta, _ := base["metadata"].(map[string]any)
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
	}
	annotations[ServedByAnnotation] = "aggregated"
	meta["annotations"] = annotations
	meta["namespace"], meta["uid"] = baseMeta["namespace"], baseMeta["uid"]
	meta["resourceVersion"] = fmt.Sprint(version)
	obj["apiVersion"], obj["kind"] = "route.openshift.io/v1", "Route"
	if _, ok := obj["spec"]; !ok {
		obj["spec"] = base["spec"]
	}
	return obj
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("ns") + "/" + r.PathValue("name")
	s.mu.Lock()
	_, ok := s.routes[key]
	delete(s.routes, key)
	s.mu.Unlock()
	if !ok {
		writeJSON(w, 404, status(404, "NotFound", "not found"))
		return
	}
	writeJSON(w, 200, status(200, "", "deleted"))
}

func status(code int, reason, message string) map[string]any {
	st := "Failure"
	if code < 300 {
		st = "Success"
	}
	return map[string]any{"kind": "Status", "apiVersion": "v1", "status": st, "code": code, "reason": reason, "message": message}
}

func (s *Server) openAPIV2(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("ETag", `"`+v2ETag+`"`)
	if r.Header.Get("If-None-Match") == `"`+v2ETag+`"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(v2Document)
	if err == nil && r.Header.Get("X-Remote-User") == "system:aggregator" {
		s.aggregatorV2Downloads.Add(1)
	}
}

// The OpenAPI documents, built once.
var (
	v2Document, v2ETag = buildV2()
	v3Document         = map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]any{"title": "OpenShift", "version": "v1"},
		"paths": map[string]any{
			"/apis/route.openshift.io/v1/namespaces/{namespace}/routes": map[string]any{"get": map[string]any{"operationId": "listRouteOpenshiftIoV1NamespacedRoute"}},
		},
	}
	v3Hash = "0123456789abcdef"
)

func buildV2() ([]byte, string) {
	gvk := []any{map[string]any{"group": "route.openshift.io", "version": "v1", "kind": "Route"}}
	op := func(id string) map[string]any {
		return map[string]any{"operationId": id, "responses": map[string]any{"200": map[string]any{"description": "OK"}}}
	}
	doc := map[string]any{
		"swagger": "2.0",
		"info":    map[string]any{"title": "OpenShift", "version": "v1"},
		"paths": map[string]any{
			// The group-version discovery path every k8s.io/apiserver-based server publishes.
			"/apis/route.openshift.io/v1/":       map[string]any{"get": op("getRouteOpenshiftIoV1APIResources")},
			"/apis/route.openshift.io/v1/routes": map[string]any{"get": op("listRouteOpenshiftIoV1RouteForAllNamespaces")},
			"/apis/route.openshift.io/v1/namespaces/{namespace}/routes": map[string]any{
				"get":  op("listRouteOpenshiftIoV1NamespacedRoute"),
				"post": op("createRouteOpenshiftIoV1NamespacedRoute"),
			},
			"/apis/route.openshift.io/v1/namespaces/{namespace}/routes/{name}": map[string]any{
				"get":    op("readRouteOpenshiftIoV1NamespacedRoute"),
				"delete": op("deleteRouteOpenshiftIoV1NamespacedRoute"),
			},
			"/apis/route.openshift.io/v1/namespaces/{namespace}/routes/{name}/status": map[string]any{"get": op("readRouteOpenshiftIoV1NamespacedRouteStatus")},
			"/apis/route.openshift.io/v1/watch/routes":                                map[string]any{"get": op("watchRouteOpenshiftIoV1RouteListForAllNamespaces")},
		},
		"definitions": map[string]any{
			"com.github.openshift.api.route.v1.Route": map[string]any{"type": "object", "x-kubernetes-group-version-kind": gvk},
			"com.github.openshift.api.route.v1.RouteList": map[string]any{
				"type":                            "object",
				"x-kubernetes-group-version-kind": []any{map[string]any{"group": "route.openshift.io", "version": "v1", "kind": "RouteList"}},
			},
		},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		panic(errors.New("fakeroute: cannot encode the OpenAPI document"))
	}
	sum := sha256.Sum256(raw)
	return raw, strings.ToUpper(hex.EncodeToString(sum[:16]))
}
