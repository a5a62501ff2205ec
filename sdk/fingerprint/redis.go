package fingerprint

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configure a [RedisStore]. The zero value uses the defaults.
type RedisOptions struct {
	// Namespace prefixes every key ("<namespace>:fp:<hash>"); "" means
	// "aishield". Processes that share fingerprints use the same namespace
	// (and the same fingerprint [Options]).
	Namespace string
	// MaxHolders bounds the exchanges kept and returned per fingerprint;
	// counts saturate at it. 0 means DefaultMaxHolders.
	MaxHolders int
	// Batch is the number of fingerprints per pipeline round trip; 0 means
	// 2048.
	Batch int
}

// RedisStore is a [Store] in Redis, so that several processes share what
// they saw. Each fingerprint is a sorted set of exchange IDs scored by their
// expiry time (Unix milliseconds), trimmed to MaxHolders members on every
// write and expiring with its newest member, so memory stays bounded by the
// TTL and Redis's own maxmemory policy. All commands of a call are
// pipelined. It is safe for concurrent use.
type RedisStore struct {
	c    redis.UniversalClient
	opts RedisOptions
	now  func() time.Time
}

// NewRedisStore returns a store on client (a *redis.Client,
// *redis.ClusterClient or *redis.Ring). The client stays the caller's.
func NewRedisStore(client redis.UniversalClient, opts RedisOptions) *RedisStore {
	if opts.Namespace == "" {
		opts.Namespace = "aishield"
	}
	if opts.MaxHolders <= 0 {
		opts.MaxHolders = DefaultMaxHolders
	}
	if opts.Batch <= 0 {
		opts.Batch = 2048
	}
	return &RedisStore{c: client, opts: opts, now: time.Now}
}

var _ Store = (*RedisStore)(nil)

func (s *RedisStore) key(h uint64) string {
	var b [64]byte
	k := append(b[:0], s.opts.Namespace...)
	k = append(k, ":fp:"...)
	k = strconv.AppendUint(k, h, 16)
	return string(k)
}

// RedisError wraps a failure of the Redis store.
type RedisError struct {
	Op  string // "record" or "lookup"
	Err error
}

// Error implements error.
func (e *RedisError) Error() string { return fmt.Sprintf("fingerprint: redis %s: %v", e.Op, e.Err) }

// Unwrap returns the underlying error.
func (e *RedisError) Unwrap() error { return e.Err }

// Record implements [Store].
func (s *RedisStore) Record(ctx context.Context, exchange string, hashes []uint64, ttl time.Duration) error {
	return s.RecordAll(ctx, []string{exchange}, [][]uint64{hashes}, ttl)
}

// RecordAll records, for each i, that exchanges[i] holds hashes[i], as
// Record does, in one pipeline: one round trip per Batch fingerprints in
// all, rather than per exchange.
func (s *RedisStore) RecordAll(ctx context.Context, exchanges []string, hashes [][]uint64, ttl time.Duration) error {
	if len(exchanges) != len(hashes) {
		return &RedisError{Op: "record", Err: fmt.Errorf("%d exchanges for %d lists of hashes", len(exchanges), len(hashes))}
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	now := s.now()
	expires := float64(now.Add(ttl).UnixMilli())
	nowMs := strconv.FormatInt(now.UnixMilli(), 10)
	pipe, queued := s.c.Pipeline(), 0
	for i, exchange := range exchanges {
		for _, h := range dedupe(hashes[i]) {
			k := s.key(h)
			pipe.ZAdd(ctx, k, redis.Z{Score: expires, Member: exchange})
			pipe.ZRemRangeByScore(ctx, k, "-inf", nowMs)
			pipe.ZRemRangeByRank(ctx, k, 0, int64(-s.opts.MaxHolders-1))
			pipe.PExpire(ctx, k, ttl)
			if queued++; queued == s.opts.Batch {
				if _, err := pipe.Exec(ctx); err != nil {
					return &RedisError{Op: "record", Err: err}
				}
				pipe, queued = s.c.Pipeline(), 0
			}
		}
	}
	if queued > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return &RedisError{Op: "record", Err: err}
		}
	}
	return nil
}

// Lookup implements [Store].
func (s *RedisStore) Lookup(ctx context.Context, hashes []uint64) ([]Holders, error) {
	out := make([]Holders, len(hashes))
	lo := "(" + strconv.FormatInt(s.now().UnixMilli(), 10)
	for done := 0; done < len(hashes); {
		n := min(len(hashes)-done, s.opts.Batch)
		pipe := s.c.Pipeline()
		cmds := make([]*redis.StringSliceCmd, n)
		for i, h := range hashes[done : done+n] {
			cmds[i] = pipe.ZRevRangeByScore(ctx, s.key(h), &redis.ZRangeBy{Min: lo, Max: "+inf", Count: int64(s.opts.MaxHolders)})
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, &RedisError{Op: "lookup", Err: err}
		}
		for i, c := range cmds {
			ids, err := c.Result()
			if err != nil && err != redis.Nil {
				return nil, &RedisError{Op: "lookup", Err: err}
			}
			out[done+i] = Holders{Count: len(ids), Exchanges: ids}
		}
		done += n
	}
	return out, nil
}

func dedupe(hashes []uint64) []uint64 {
	seen := make(map[uint64]struct{}, len(hashes))
	out := make([]uint64, 0, len(hashes))
	for _, h := range hashes {
		if _, ok := seen[h]; !ok {
			seen[h] = struct{}{}
			out = append(out, h)
		}
	}
	return out
}
