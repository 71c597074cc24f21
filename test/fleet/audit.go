package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// AuditEvent is the part of a kube-apiserver audit event the tests read.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	Stage                    string    `json:"stage"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	ResponseStatus           *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

func (e AuditEvent) String() string {
	if e.ObjectRef == nil {
		return e.Verb
	}
	r := e.ObjectRef
	s := fmt.Sprintf("%s %s", e.Verb, r.Resource)
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	return fmt.Sprintf("%s %s/%s at %s", s, r.Namespace, r.Name, e.RequestReceivedTimestamp.Format(time.RFC3339Nano))
}

// Writes returns the writes (create, update, patch, delete) that user made since, as the
// cluster's kube-apiserver audited them, leaving out Lease renewals (leader election).
func (c *Cluster) Writes(user string, since time.Time) ([]AuditEvent, error) {
	f, err := os.Open(c.AuditLog)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []AuditEvent
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("reading %s: %w", c.AuditLog, err)
		}
		if e.User.Username != user || e.Stage != "ResponseComplete" || e.RequestReceivedTimestamp.Before(since) {
			continue
		}
		switch e.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if e.ObjectRef != nil && e.ObjectRef.Resource == "leases" {
			continue
		}
		out = append(out, e)
	}
	return out, scanner.Err()
}
