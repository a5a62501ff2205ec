package quarantine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisStore is a Store in Redis, shared by every process that uses the
// same server and namespace, and kept across their restarts. Per
// destination it keeps a hash of sign counts with first and last times
// ("<ns>:q:health:<dest>"), a sorted set of the counting signs within the
// window ("<ns>:q:recent:<dest>", expiring with it) and the quarantine
// ("<ns>:q:state:<dest>"); a set lists the destinations. Observe runs as
// one Lua script, so two processes seeing signs at once trip the
// quarantine once. It is safe for concurrent use.
//
// Whoever can write to the Redis server can clear a quarantine, as
// "aishield quarantine clear" does, or record one: protect the server as
// the fingerprint store's.
type RedisStore struct {
	c  redis.UniversalClient
	ns string
}

// NewRedisStore returns a store on client under namespace ("" means
// "aishield"). The client stays the caller's.
func NewRedisStore(client redis.UniversalClient, namespace string) *RedisStore {
	if namespace == "" {
		namespace = "aishield"
	}
	return &RedisStore{c: client, ns: namespace}
}

func (r *RedisStore) key(kind, dest string) string { return r.ns + ":q:" + kind + ":" + dest }
func (r *RedisStore) destsKey() string             { return r.ns + ":q:dests" }

// observeScript: KEYS health, recent, state, dests; ARGV now (ms), window
// (ms), threshold, destination name, the state to set when it trips
// (JSON without its count; its until in ms follows, 0 for none), the number of signs, the
// signs, then for each sign 1 when it counts and 0 otherwise, then a
// token unique to the call. Returns {tripped, state value or false}. The
// scripts are built (their SHA-1 taken) on first use, not at every start
// of a program that links this package.
var observeScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(`
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local threshold = tonumber(ARGV[3])
local n = tonumber(ARGV[7])
local counted = 0
for i = 1, n do
  local s = ARGV[7 + i]
  redis.call('HINCRBY', KEYS[1], s .. ':n', 1)
  redis.call('HSETNX', KEYS[1], s .. ':first', now)
  redis.call('HSET', KEYS[1], s .. ':last', now)
  if ARGV[7 + n + i] == '1' then
    counted = counted + 1
    redis.call('ZADD', KEYS[2], now, ARGV[8 + 2 * n] .. ':' .. s)
  end
end
redis.call('SADD', KEYS[4], ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
redis.call('PEXPIRE', KEYS[2], window)
local cur = redis.call('GET', KEYS[3])
if counted > 0 and redis.call('ZCARD', KEYS[2]) >= threshold then
  local active = false
  if cur then
    local untilms = tonumber(string.match(cur, '^(%d+)\n'))
    active = (untilms == 0 or untilms > now)
  end
  if not active then
    local v = ARGV[6] .. '\n' .. redis.call('ZCARD', KEYS[2]) .. '\n' .. ARGV[5]
    redis.call('SET', KEYS[3], v)
    return {1, v}
  end
end
return {0, cur or false}
`)
})

// clearScript: KEYS state, recent; ARGV since (RFC 3339 with nanoseconds,
// "" for any). Deletes the state when it tripped at since.
var clearScript = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return false end
if ARGV[1] ~= '' and not string.find(cur, '"since":"' .. ARGV[1] .. '"', 1, true) then return false end
redis.call('DEL', KEYS[1], KEYS[2])
return cur
`)
})

// Observe implements Store.
func (r *RedisStore) Observe(ctx context.Context, obs Observation, rule Rule) (State, bool, error) {
	st := State{Destination: obs.Destination, Since: obs.Time.UTC(), Exchange: obs.Exchange, Signs: map[string]int{}}
	if rule.Duration > 0 {
		st.Until = st.Since.Add(rule.Duration)
	}
	counts := make([]string, len(obs.Signs))
	for i, s := range obs.Signs {
		counts[i] = "0"
		if slices.Contains(rule.Signs, s) {
			st.Signs[s]++
			counts[i] = "1"
		}
	}
	js, err := json.Marshal(st)
	if err != nil {
		return State{}, false, err
	}
	untilMS := int64(0)
	if !st.Until.IsZero() {
		untilMS = st.Until.UnixMilli()
	}
	args := []any{obs.Time.UnixMilli(), max(rule.Window.Milliseconds(), 1), max(rule.Threshold, 1), obs.Destination, string(js),
		strconv.FormatInt(untilMS, 10), len(obs.Signs)}
	for _, s := range obs.Signs {
		args = append(args, s)
	}
	for _, c := range counts {
		args = append(args, c)
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return State{}, false, err
	}
	args = append(args, hex.EncodeToString(nonce[:]))
	keys := []string{r.key("health", obs.Destination), r.key("recent", obs.Destination), r.key("state", obs.Destination), r.destsKey()}
	res, err := observeScript().Run(ctx, r.c, keys, args...).Slice()
	if err != nil {
		return State{}, false, fmt.Errorf("quarantine: recording signs of %s: %w", obs.Destination, err)
	}
	if len(res) != 2 {
		return State{}, false, errors.New("quarantine: unexpected reply from Redis")
	}
	tripped, _ := res[0].(int64)
	v, _ := res[1].(string)
	if v == "" {
		return State{}, false, nil
	}
	out, err := decodeState(v)
	return out, tripped == 1, err
}

// decodeState reads a stored quarantine: its end in milliseconds (0 for
// none, read by the scripts), the count of signs in the window when it
// tripped, and the state as JSON.
func decodeState(v string) (State, error) {
	bad := errors.New("quarantine: a quarantine record in Redis does not decode")
	_, rest, ok := strings.Cut(v, "\n")
	count, js, ok2 := strings.Cut(rest, "\n")
	n, err := strconv.Atoi(count)
	var st State
	if !ok || !ok2 || err != nil || n < 0 || json.Unmarshal([]byte(js), &st) != nil {
		return State{}, bad
	}
	st.Count = n
	return st, nil
}

// Get implements Store.
func (r *RedisStore) Get(ctx context.Context, dest string) (State, bool, error) {
	v, err := r.c.Get(ctx, r.key("state", dest)).Result()
	if errors.Is(err, redis.Nil) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("quarantine: reading the quarantine of %s: %w", dest, err)
	}
	st, err := decodeState(v)
	return st, err == nil, err
}

// Clear implements Store.
func (r *RedisStore) Clear(ctx context.Context, dest string, since time.Time) (State, bool, error) {
	s := ""
	if !since.IsZero() {
		b, _ := since.UTC().MarshalText()
		s = string(b)
	}
	v, err := clearScript().Run(ctx, r.c, []string{r.key("state", dest), r.key("recent", dest)}, s).Text()
	if errors.Is(err, redis.Nil) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("quarantine: clearing %s: %w", dest, err)
	}
	st, err := decodeState(v)
	return st, err == nil, err
}

// Health implements Store.
func (r *RedisStore) Health(ctx context.Context) ([]Health, error) {
	names, err := r.c.SMembers(ctx, r.destsKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("quarantine: listing destinations: %w", err)
	}
	sort.Strings(names)
	out := make([]Health, 0, len(names))
	for _, name := range names {
		h := Health{Destination: name, Signs: map[string]SignStat{}}
		fields, err := r.c.HGetAll(ctx, r.key("health", name)).Result()
		if err != nil {
			return nil, fmt.Errorf("quarantine: reading the health of %s: %w", name, err)
		}
		for f, v := range fields {
			sign, part, ok := strings.Cut(f, ":")
			n, perr := strconv.ParseInt(v, 10, 64)
			if !ok || perr != nil {
				continue
			}
			st := h.Signs[sign]
			switch part {
			case "n":
				st.Count = n
			case "first":
				st.First = time.UnixMilli(n).UTC()
			case "last":
				st.Last = time.UnixMilli(n).UTC()
			}
			h.Signs[sign] = st
		}
		st, ok, err := r.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		if ok {
			h.State = &st
		}
		out = append(out, h)
	}
	return out, nil
}

// ClaimProbe implements Store.
func (r *RedisStore) ClaimProbe(ctx context.Context, dest string, every time.Duration) (bool, error) {
	ok, err := r.c.SetNX(ctx, r.key("probe", dest), "1", every).Result()
	if err != nil {
		return false, fmt.Errorf("quarantine: claiming a probe of %s: %w", dest, err)
	}
	return ok, nil
}
