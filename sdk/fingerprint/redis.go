package fingerprint

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"strconv"
	"sync/atomic"
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
	// Key keys the MAC (HMAC-SHA256) that every record carries: a record
	// whose MAC does not verify under Key is ignored by lookups and
	// counted (see [RedisStore.InvalidRecords]), so that whoever can write
	// to the Redis server without the key cannot make an exchange hold
	// material, nor material look common. Processes sharing a namespace
	// share the key. Required: a store without a key fails every call
	// with [ErrNoStoreKey]. At least 16 bytes.
	Key []byte
	// Log, when set, receives one warning per lookup that ignored records
	// (how many; never a key, a member or a value).
	Log *slog.Logger
}

// ErrNoStoreKey is wrapped by the errors of a [RedisStore] made without
// RedisOptions.Key (or with one shorter than 16 bytes).
var ErrNoStoreKey = errors.New("fingerprint: the Redis store has no MAC key (RedisOptions.Key, at least 16 bytes)")

// macLen is the length in bytes of a record's MAC (hex-encoded in the
// member, after a dot).
const macLen = 16

// RedisStore is a [Store] in Redis, so that several processes share what
// they saw. Each fingerprint is a sorted set of exchange IDs scored by their
// expiry time (Unix milliseconds), trimmed to MaxHolders members on every
// write and expiring with its newest member, so memory stays bounded by the
// TTL and Redis's own maxmemory policy. All commands of a call are
// pipelined. It is safe for concurrent use.
type RedisStore struct {
	c       redis.UniversalClient
	opts    RedisOptions
	now     func() time.Time
	invalid atomic.Uint64
}

// NewRedisStore returns a store on client (a *redis.Client,
// *redis.ClusterClient or *redis.Ring). The client stays the caller's.
//
// Each record is a member "<exchange>.<MAC>" of the fingerprint's sorted
// set, the MAC binding the namespace, the fingerprint and the exchange, so
// that a valid record cannot be moved to another fingerprint either. A
// writer without the key can still delete records or let forged ones
// crowd a set (lookups read up to twice MaxHolders members): it can hide
// material from the cross-exchange signal, as an unreachable store does,
// but never add any.
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
	opts.Key = append([]byte(nil), opts.Key...)
	return &RedisStore{c: client, opts: opts, now: time.Now}
}

// InvalidRecords returns the number of records lookups ignored because
// their MAC did not verify, since the store was made.
func (s *RedisStore) InvalidRecords() uint64 { return s.invalid.Load() }

func (s *RedisStore) keyed() error {
	if len(s.opts.Key) < 16 {
		return ErrNoStoreKey
	}
	return nil
}

// member returns the record of exchange under the set key k: the
// exchange and its MAC. m is an HMAC of the store's key, reused.
func (s *RedisStore) member(m hash.Hash, k, exchange string) string {
	var sum [sha256.Size]byte
	m.Reset()
	m.Write([]byte(k))
	m.Write([]byte{0})
	m.Write([]byte(exchange))
	mac := m.Sum(sum[:0])
	b := make([]byte, 0, len(exchange)+1+2*macLen)
	b = append(b, exchange...)
	b = append(b, '.')
	b = hex.AppendEncode(b, mac[:macLen])
	return string(b)
}

// exchangeOf returns the exchange of a record under the set key k, false
// when its MAC does not verify.
func (s *RedisStore) exchangeOf(m hash.Hash, k, member string) (string, bool) {
	n := len(member) - 1 - 2*macLen
	if n < 0 || member[n] != '.' {
		return "", false
	}
	got, err := hex.DecodeString(member[n+1:])
	if err != nil {
		return "", false
	}
	exchange := member[:n]
	var sum [sha256.Size]byte
	m.Reset()
	m.Write([]byte(k))
	m.Write([]byte{0})
	m.Write([]byte(exchange))
	want := m.Sum(sum[:0])
	if !hmac.Equal(got, want[:macLen]) {
		return "", false
	}
	return exchange, true
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
	if err := s.keyed(); err != nil {
		return &RedisError{Op: "record", Err: err}
	}
	m := hmac.New(sha256.New, s.opts.Key)
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
			pipe.ZAdd(ctx, k, redis.Z{Score: expires, Member: s.member(m, k, exchange)})
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
	if err := s.keyed(); err != nil {
		return nil, &RedisError{Op: "lookup", Err: err}
	}
	m := hmac.New(sha256.New, s.opts.Key)
	out := make([]Holders, len(hashes))
	lo := "(" + strconv.FormatInt(s.now().UnixMilli(), 10)
	invalid := 0
	for done := 0; done < len(hashes); {
		n := min(len(hashes)-done, s.opts.Batch)
		pipe := s.c.Pipeline()
		cmds := make([]*redis.StringSliceCmd, n)
		for i, h := range hashes[done : done+n] {
			cmds[i] = pipe.ZRevRangeByScore(ctx, s.key(h), &redis.ZRangeBy{Min: lo, Max: "+inf", Count: int64(2 * s.opts.MaxHolders)})
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, &RedisError{Op: "lookup", Err: err}
		}
		for i, c := range cmds {
			ids, err := c.Result()
			if err != nil && err != redis.Nil {
				return nil, &RedisError{Op: "lookup", Err: err}
			}
			k := s.key(hashes[done+i])
			valid := ids[:0]
			for _, id := range ids {
				if ex, ok := s.exchangeOf(m, k, id); ok && len(valid) < s.opts.MaxHolders {
					valid = append(valid, ex)
				} else if !ok {
					invalid++
				}
			}
			out[done+i] = Holders{Count: len(valid), Exchanges: valid}
		}
		done += n
	}
	if invalid > 0 {
		s.invalid.Add(uint64(invalid))
		if s.opts.Log != nil {
			s.opts.Log.Warn("fingerprint store: ignored records whose MAC does not verify", "namespace", s.opts.Namespace, "records", invalid)
		}
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
