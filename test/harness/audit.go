package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// AuditEvent is the part of a kube-apiserver audit event tests read.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	// UserAgent tells apart the replicas of one ServiceAccount (the manager names its
	// leader election identity in it).
	UserAgent string `json:"userAgent"`
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
	resource := r.Resource
	if r.Subresource != "" {
		resource += "/" + r.Subresource
	}
	return fmt.Sprintf("%s %s %s/%s at %s", e.Verb, resource, r.Namespace, r.Name, e.RequestReceivedTimestamp.Format(time.RFC3339Nano))
}

// Writes returns the writes (create, update, patch, delete, deletecollection) user made
// (any user's if user is "") since the given time, as the cluster's kube-apiserver audited them, without Lease
// writes (leader election and heartbeats). The audit log is written synchronously, so a
// write that returned is in it.
func (c *Cluster) Writes(user string, since time.Time) ([]AuditEvent, error) {
	f, err := os.Open(c.AuditLog)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log of %s: %w", c.Name, err)
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
		if (user == "" || e.User.Username == user) && e.Stage == "ResponseComplete" && !e.RequestReceivedTimestamp.Before(since) &&
			isWrite(e.Verb) && (e.ObjectRef == nil || e.ObjectRef.Resource != "leases") {
			out = append(out, e)
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", c.AuditLog, err)
	}
	return out, nil
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}
