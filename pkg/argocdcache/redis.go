package argocdcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options locate an Argo CD's redis.
type Options struct {
	// Address is host:port.
	Address string
	// Password is redis's (Argo CD 3 and the GitOps operator set one); empty: none.
	Password string
}

// Client talks to one Argo CD's redis.
type Client struct{ rdb *redis.Client }

// New connects lazily: nothing is dialled until the first call.
func New(o Options) *Client {
	return &Client{rdb: redis.NewClient(&redis.Options{
		Addr: o.Address, Password: o.Password,
		// Argo CD's redis is a cache on the cluster's network: a short dial, and one retry.
		MaxRetries: 1, DisableIdentity: true,
	})}
}

// Close releases the connections.
func (c *Client) Close() error { return c.rdb.Close() }

// Get is a key's raw value; found is false when the key is not there.
func (c *Client) Get(ctx context.Context, key string) (value []byte, found bool, err error) {
	value, err = c.rdb.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %s from Argo CD's redis: %w", key, err)
	}
	return value, true, nil
}

// Set writes a key without expiry: the writer deletes it when its Application goes.
func (c *Client) Set(ctx context.Context, key string, value []byte) error {
	if err := c.rdb.Set(ctx, key, value, 0).Err(); err != nil {
		return fmt.Errorf("writing %s to Argo CD's redis: %w", key, err)
	}
	return nil
}

// Exists says whether a key is there.
func (c *Client) Exists(ctx context.Context, key string) (bool, error) {
	n, err := c.rdb.Exists(ctx, key).Result()
	if err != nil {
		return false, fmt.Errorf("looking up %s in Argo CD's redis: %w", key, err)
	}
	return n == 1, nil
}

// Delete removes keys; absent ones are no error.
func (c *Client) Delete(ctx context.Context, keys ...string) error {
	if err := c.rdb.Del(ctx, keys...).Err(); err != nil {
		return fmt.Errorf("deleting %v from Argo CD's redis: %w", keys, err)
	}
	return nil
}

// Publish announces on a channel, as Argo CD does after writing a tree.
func (c *Client) Publish(ctx context.Context, channel string) error {
	if err := c.rdb.Publish(ctx, channel, "").Err(); err != nil {
		return fmt.Errorf("announcing %s on Argo CD's redis: %w", channel, err)
	}
	return nil
}

// maxBackoff bounds the wait between attempts to reach a redis that is down.
const maxBackoff = 10 * time.Second

// Announcements calls announced with the instance of every tree Argo CD announces
// (TreeChannelPattern) until ctx is done. The subscription reconnects by itself after a
// lost connection; reconnected is called each time it (re)subscribes, so that the caller
// can look again at what it may have missed.
func (c *Client) Announcements(ctx context.Context, announced func(instance string), reconnected func()) error {
	// Subscribed lazily: go-redis dials on Receive, and again after a lost connection.
	sub := c.rdb.PSubscribe(ctx, TreeChannelPattern)
	defer func() { _ = sub.Close() }()
	backoff := time.Duration(0)
	for {
		msg, err := sub.Receive(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if IsAuthError(err) {
			return fmt.Errorf("subscribing to Argo CD's tree announcements: %w", err)
		}
		if err != nil {
			// go-redis reconnects on the next Receive and subscribes again; while redis is
			// down, at a growing interval rather than in a hot loop.
			backoff = min(max(2*backoff, 100*time.Millisecond), maxBackoff)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "psubscribe" {
				reconnected()
			}
		case *redis.Message:
			if instance, ok := InstanceFromChannel(m.Channel); ok {
				announced(instance)
			}
		}
	}
}

// IsAuthError says whether redis refused the password (or wants one): the caller reads the
// password again rather than retrying with the same.
func IsAuthError(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "invalid password")
}
