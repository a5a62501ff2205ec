package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Environment variables of `aishield proxy`'s shared store.
const (
	// envRedisURL is the Redis URL used when --redis is not given, so that
	// a URL holding a password is not on the command line (visible in ps).
	envRedisURL = "AISHIELD_REDIS_URL"
	// envRedisPassword is the Redis password, overriding the URL's.
	envRedisPassword = "AISHIELD_REDIS_PASSWORD"
	// envStoreKey keys the MAC of the fingerprint store's records; when
	// unset it is derived from AISHIELD_CANARY_KEY.
	envStoreKey = "AISHIELD_STORE_KEY"
)

// redisTarget is what --redis (or AISHIELD_REDIS_URL) designates: the
// client options and a display form without credentials.
type redisTarget struct {
	opts    *redis.Options
	display string
}

// parseRedisTarget reads the value of --redis: a redis:// or rediss://
// (TLS) URL, redis[s]://[user:password@]host:port[/db], or a bare
// host:port. password, when not empty, replaces the URL's. caPEM, when
// not empty, is the CA bundle a rediss:// server's certificate must chain
// to (instead of the system's roots). Errors never carry the URL's
// userinfo nor the password.
func parseRedisTarget(arg, password string, caPEM []byte) (*redisTarget, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return nil, errors.New("empty Redis address")
	}
	t := &redisTarget{}
	if strings.Contains(arg, "://") {
		u, err := url.Parse(arg)
		if err != nil {
			return nil, errors.New("not a valid URL (redis://[user:password@]host:port/db or rediss://...)")
		}
		if u.Scheme != "redis" && u.Scheme != "rediss" {
			return nil, fmt.Errorf("URL scheme %q: want redis:// or rediss:// (TLS)", u.Scheme)
		}
		if u.Host == "" {
			return nil, errors.New("URL without host")
		}
		t.display = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
		o, err := redis.ParseURL(arg)
		if err != nil {
			return nil, fmt.Errorf("the Redis URL %s: %s", t.display, scrubSecrets(err.Error(), append(urlSecrets(arg), arg)...))
		}
		t.opts = o
	} else {
		host, port, err := net.SplitHostPort(arg)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(host, "/@?#") {
			return nil, errors.New("the value is neither host:port nor a redis:// URL")
		}
		t.opts = &redis.Options{Addr: arg}
		t.display = arg
	}
	if password != "" {
		t.opts.Password = password
	}
	if len(caPEM) > 0 {
		if t.opts.TLSConfig == nil {
			return nil, errors.New("--redis-ca is for rediss:// (TLS) URLs")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("--redis-ca holds no PEM certificate")
		}
		t.opts.TLSConfig.RootCAs = pool
	}
	if t.opts.TLSConfig != nil {
		t.opts.TLSConfig.MinVersion = tls.VersionTLS12
	}
	return t, nil
}

// redisAddress returns the Redis address a command uses: flag (the value
// of --redis), else AISHIELD_REDIS_URL; "" when neither is set.
func redisAddress(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(envRedisURL)
}

// parseRedisFlags reads the Redis target of raw (the address redisAddress
// returned), with the password of AISHIELD_REDIS_PASSWORD and the CA
// bundle of the file caFile ("" for the system's roots). Its errors name
// the flag, never a credential.
func parseRedisFlags(raw, caFile string) (*redisTarget, error) {
	var caPEM []byte
	if caFile != "" {
		var err error
		if caPEM, err = os.ReadFile(caFile); err != nil {
			return nil, fmt.Errorf("--redis-ca: %w", err)
		}
	}
	t, err := parseRedisTarget(raw, os.Getenv(envRedisPassword), caPEM)
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	return t, nil
}

// dialRedis connects to t (whose address was written raw) and checks
// within 5 seconds that the server answers. go-redis logs through a
// process-wide logger: the CLI owns its process, and points that logger
// at errOut with t's credentials scrubbed. The caller closes the client.
func dialRedis(ctx context.Context, t *redisTarget, raw string, errOut io.Writer) (*redis.Client, error) {
	secrets := redisSecrets(t, raw)
	redis.SetLogger(&scrubbingLogger{w: errOut, secrets: secrets})
	rc := redis.NewClient(t.opts)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := rc.Ping(pctx).Err()
	cancel()
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("--redis %s: %s", t.display, scrubSecrets(err.Error(), secrets...))
	}
	return rc, nil
}

// userPassword returns the password of u's userinfo, "" when none.
func userPassword(u *url.URL) string {
	if u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// scrubSecrets replaces every occurrence in s of each non-empty secret
// (and of its URL-escaped form) with "***".
func scrubSecrets(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) < 1 {
			continue
		}
		s = strings.ReplaceAll(s, sec, "***")
		if esc := url.QueryEscape(sec); esc != sec {
			s = strings.ReplaceAll(s, esc, "***")
		}
		if esc := url.PathEscape(sec); esc != sec {
			s = strings.ReplaceAll(s, esc, "***")
		}
	}
	return s
}

// storeKey returns the key of the fingerprint store's MACs: AISHIELD_STORE_KEY,
// else one derived from the canary key (which proxies sharing a store
// share already); nil when neither is set.
func storeKey(getenv func(string) string) []byte {
	if k := getenv(envStoreKey); k != "" {
		return []byte(k)
	}
	if k := getenv("AISHIELD_CANARY_KEY"); k != "" {
		m := hmac.New(sha256.New, []byte(k))
		m.Write([]byte("aishield fingerprint store"))
		return m.Sum(nil)
	}
	return nil
}

// scrubbingLogger is go-redis's logger for the CLI: its lines go to the
// command's error output, with the Redis credentials replaced. go-redis
// logs through one logger per process (redis.SetLogger), which only the
// CLI, owning its process, sets.
type scrubbingLogger struct {
	mu      sync.Mutex
	w       interface{ Write([]byte) (int, error) }
	secrets []string
}

func (l *scrubbingLogger) Printf(_ context.Context, format string, v ...any) {
	line := scrubSecrets(fmt.Sprintf(format, v...), l.secrets...)
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, "aishield:", strings.TrimRight(line, "\n"))
}

// redisSecrets lists the credentials of t to scrub from go-redis's logs
// and errors.
func redisSecrets(t *redisTarget, raw string) []string {
	return append(urlSecrets(raw), t.opts.Password)
}

// urlSecrets lists the credentials of a Redis URL: its user information
// and password, decoded and as written.
func urlSecrets(raw string) []string {
	var out []string
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		out = append(out, u.User.String(), userPassword(u))
	}
	// The password as written in the URL (escaped as its author chose).
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		if at := strings.LastIndexByte(strings.SplitN(rest, "/", 2)[0], '@'); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				out = append(out, pw)
			}
		}
	}
	return out
}
