// Package argocdcache reads and writes Argo CD's redis cache the way Argo CD's own
// components do (util/cache in Argo CD): the key of an Application's resource tree, the
// channel on which a changed tree is announced, and the value's encoding (JSON, gzipped
// under Argo CD's default --redis-compress=gzip). The spoke agent reads the tree the spoke's
// application controller keeps; the hub manager writes a pulled Application's tree where
// the hub's argocd-server reads one.
//
// The format is Argo CD's, not ours: TestCacheFormatIsArgoCDs (test/argocd) reads it out of
// the source of every Argo CD release we support, and the e2e reads what a real
// application controller wrote.
package argocdcache

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// CacheVersion is the suffix Argo CD puts on every cache key (common.CacheVersion); it
// changes when a release changes a cached type incompatibly.
const CacheVersion = "1.8.3"

// Key prefixes of Argo CD's application state cache (util/cache/appstate).
const (
	treePrefix             = "app|resources-tree|"
	managedResourcesPrefix = "app|managed-resources|"
	gzipSuffix             = ".gz"
)

// TreeKey is the redis key of an Application's tree (its first shard). instance is
// InstanceName's.
func TreeKey(instance string) string { return ShardKey(instance, 0) }

// ShardKey is the redis key of one shard of an Application's tree: Argo CD splits a tree
// when ARGOCD_APPLICATION_TREE_SHARD_SIZE is set; the first shard says how many there are.
func ShardKey(instance string, shard int64) string {
	key := treePrefix + instance
	if shard > 0 {
		key += "|" + strconv.FormatInt(shard, 10)
	}
	return key + "|" + CacheVersion + gzipSuffix
}

// ManagedResourcesKey is the redis key of an Application's managed resources: Argo CD's
// diff of each (its ResourceDiffs), which argocd-server's managed-resources call answers
// from, for the UI's diff and its resource panel. Argo CD writes it after the tree.
func ManagedResourcesKey(instance string) string {
	return managedResourcesPrefix + instance + "|" + CacheVersion + gzipSuffix
}

// TreeChannel is the redis channel on which Argo CD announces that an Application's tree
// was written (argocd-server's resource-tree stream listens on it).
func TreeChannel(instance string) string {
	return managedResourcesPrefix + instance + "|" + CacheVersion
}

// TreeChannelPattern matches every TreeChannel, for PSUBSCRIBE.
const TreeChannelPattern = managedResourcesPrefix + "*|" + CacheVersion

// InstanceFromChannel is the Application instance a TreeChannel names, if it is one.
func InstanceFromChannel(channel string) (string, bool) {
	rest, ok := strings.CutPrefix(channel, managedResourcesPrefix)
	if !ok {
		return "", false
	}
	instance, ok := strings.CutSuffix(rest, "|"+CacheVersion)
	return instance, ok && instance != ""
}

// InstanceName is how Argo CD names an Application in its cache: its name when it lives in
// Argo CD's own namespace, "namespace_name" otherwise (apps in any namespace).
func InstanceName(appNamespace, appName, argoNamespace string) string {
	if appNamespace == "" || appNamespace == argoNamespace {
		return appName
	}
	return appNamespace + "_" + appName
}

// Encode is a value as Argo CD stores it: JSON with a newline, gzipped.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return nil, fmt.Errorf("encoding a cache value: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("compressing a cache value: %w", err)
	}
	return buf.Bytes(), nil
}

// ErrTooLarge: a value inflates beyond the bound its reader set.
var ErrTooLarge = errors.New("the value inflates beyond its bound")

// Decode reads a value Argo CD stored into v, refusing one that inflates beyond maxBytes
// (a gzip bomb costs the reader nothing but this bound).
func Decode(raw []byte, maxBytes int64, v any) error {
	r, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("decompressing a cache value: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return fmt.Errorf("decompressing a cache value: %w", err)
	}
	if int64(len(data)) > maxBytes {
		return fmt.Errorf("%w (%d bytes)", ErrTooLarge, maxBytes)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decoding a cache value: %w", err)
	}
	return nil
}
