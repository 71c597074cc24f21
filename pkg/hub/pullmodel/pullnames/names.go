package pullnames

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

const (
	// maxNamePrefix keeps the readable part short enough for `kubectl get` columns; the
	// whole name stays far below the 253 characters of a ManifestWork name.
	maxNamePrefix = 40
	// hashLength hex characters (64 bits) of SHA-256: collisions among the Applications
	// of one hub are out of reach, unlike ACM's five hex characters of the UID.
	hashLength = 16
)

// WorkName is the name of the ManifestWork that carries the hub Application
// namespace/name: a readable prefix (the Application's name) and a hash of namespace and
// name. Two Applications of one name in two namespaces, pulled to one cluster, get two
// names; the same Application always gets the same name, across manager restarts.
func WorkName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	suffix := hex.EncodeToString(sum[:])[:hashLength]
	prefix := name
	if len(prefix) > maxNamePrefix {
		prefix = prefix[:maxNamePrefix]
	}
	// A DNS subdomain must start and end alphanumeric; the cut may leave a '-' or '.'.
	prefix = strings.TrimRight(prefix, "-.")
	if prefix == "" {
		return "app-" + suffix
	}
	return prefix + "-" + suffix
}

// ReportLabelValue is the value of the report's hosting-applicationset label:
// "<namespace>.<name>" as ACM writes it, shortened with a hash when over the 63
// characters of a label value.
func ReportLabelValue(namespace, name string) string {
	v := namespace + "." + name
	if len(v) <= 63 {
		return v
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return strings.TrimRight(v[:63-hashLength-1], "-._") + "-" + hex.EncodeToString(sum[:])[:hashLength]
}
