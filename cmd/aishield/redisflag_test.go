package main

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseRedisTarget(t *testing.T) {
	for _, tc := range []struct {
		arg, password      string
		addr, display, err string
		db                 int
		user, pass         string
		tls                bool
	}{
		{arg: "127.0.0.1:6379", addr: "127.0.0.1:6379", display: "127.0.0.1:6379"},
		{arg: "127.0.0.1:6379", password: "envpw", addr: "127.0.0.1:6379", display: "127.0.0.1:6379", pass: "envpw"},
		{arg: "redis://:pw-1@h:6380/2", addr: "h:6380", display: "redis://h:6380/2", db: 2, pass: "pw-1"},
		{arg: "redis://alice:pw-1@h/1", password: "envpw", addr: "h:6379", display: "redis://h/1", db: 1, user: "alice", pass: "envpw"},
		{arg: "rediss://:pw-1@h:6380", addr: "h:6380", display: "rediss://h:6380", pass: "pw-1", tls: true},
		{arg: "http://:pw-1@h:6380", err: `URL scheme "http"`},
		{arg: "redis://:pw-1@h:6380/x", err: "invalid database number"},
		{arg: "redis://:pw-1@[::1", err: "not a valid URL"},
		{arg: "justahost", err: "neither host:port"},
		{arg: "", err: "empty"},
	} {
		got, err := parseRedisTarget(tc.arg, tc.password, nil)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.arg, err, tc.err)
			} else if strings.Contains(err.Error(), "pw-1") {
				t.Errorf("%q: the password in %v", tc.arg, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.arg, err)
			continue
		}
		o := got.opts
		if o.Addr != tc.addr || got.display != tc.display || o.DB != tc.db || o.Username != tc.user || o.Password != tc.pass || (o.TLSConfig != nil) != tc.tls {
			t.Errorf("%q: addr %q display %q db %d user %q pass %q tls %v", tc.arg, o.Addr, got.display, o.DB, o.Username, o.Password, o.TLSConfig != nil)
		}
	}
}

// FuzzParseRedisTarget: whatever --redis holds, the password of its URL
// shows neither in the error nor in the display form.
func FuzzParseRedisTarget(f *testing.F) {
	f.Add("redis://:secret-pw@host:6379/0")
	f.Add("rediss://user:secret-pw@host/1")
	f.Add("redis://:secret-pw@host:6379/x")
	f.Add("redis://:secret%20pw@[::1]:6379/0?dial_timeout=x")
	f.Add("host:6379")
	f.Fuzz(func(t *testing.T, arg string) {
		got, err := parseRedisTarget(arg, "", nil)
		u, perr := url.Parse(strings.TrimSpace(arg))
		if perr != nil || u.User == nil {
			return
		}
		pw, ok := u.User.Password()
		if !ok || len(pw) < 6 || strings.Count(arg, pw) > 1 || strings.Contains(u.Host+u.Path+u.RawQuery, pw) {
			return
		}
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Fatalf("error %q holds the password %q", err, pw)
		}
		if err == nil && strings.Contains(got.display, pw) {
			t.Fatalf("display %q holds the password %q", got.display, pw)
		}
	})
}

// TestScrubbingLogger: go-redis's log lines reach the CLI's error output
// without the Redis credentials, raw or URL-escaped.
func TestScrubbingLogger(t *testing.T) {
	target, err := parseRedisTarget("redis://alice:p%40ss-w0rd!@h:6379/0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	l := &scrubbingLogger{w: &out, secrets: redisSecrets(target, "redis://alice:p%40ss-w0rd!@h:6379/0")}
	l.Printf(t.Context(), "redis: dial %s failed with %q (%s)", "redis://alice:p%40ss-w0rd!@h:6379/0", "p@ss-w0rd!", "AUTH alice p@ss-w0rd!")
	if s := out.String(); strings.Contains(s, "ss-w0rd") || !strings.Contains(s, "***") {
		t.Fatalf("log line %q", s)
	}
}
