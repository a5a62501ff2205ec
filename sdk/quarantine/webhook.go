package quarantine

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// maxQueued bounds the events waiting to be posted; beyond it the oldest
// waiting event is dropped.
const maxQueued = 256

// webhooks posts events in order, from one goroutine, each retried with
// exponential backoff until it is accepted (a 2xx answer), refused for
// good (a 4xx other than 408 and 429), or out of attempts; then the next.
type webhooks struct {
	client  *http.Client
	retries int
	backoff time.Duration

	mu      sync.Mutex
	queue   []queued
	running bool
	idle    chan struct{} // closed when the worker stops with nothing queued
	done    chan struct{} // closed by close: stop waiting between retries
	once    sync.Once
}

type queued struct {
	url  string
	body []byte
}

func newWebhooks(c *http.Client, retries int, backoff time.Duration) *webhooks {
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	if retries <= 0 {
		retries = 5
	}
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	idle := make(chan struct{})
	close(idle)
	return &webhooks{client: c, retries: retries, backoff: backoff, idle: idle, done: make(chan struct{})}
}

// post queues ev for url.
func (w *webhooks) post(url string, ev Event) {
	body, err := json.Marshal(ev)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) >= maxQueued {
		w.queue = w.queue[1:]
	}
	w.queue = append(w.queue, queued{url, body})
	if !w.running {
		w.running = true
		w.idle = make(chan struct{})
		go w.work(w.idle)
	}
}

func (w *webhooks) work(idle chan struct{}) {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.running = false
			close(idle)
			w.mu.Unlock()
			return
		}
		q := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		w.deliver(q)
	}
}

// deliver posts q, retrying.
func (w *webhooks) deliver(q queued) {
	wait := w.backoff
	for attempt := 1; attempt <= w.retries; attempt++ {
		if w.send(q.url, q.body) || attempt == w.retries {
			return
		}
		select {
		case <-time.After(wait):
		case <-w.done:
			return
		}
		wait *= 2
	}
}

// send posts body once and reports whether no retry is needed.
func (w *webhooks) send(url string, body []byte) bool {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return true
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "aishield-quarantine")
	resp, err := w.client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		return true
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return false
	}
	return true
}

// close waits for the queued events to be posted until ctx is done, then
// stops the retries and drops what is left.
func (w *webhooks) close(ctx context.Context) error {
	w.mu.Lock()
	idle := w.idle
	w.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		w.once.Do(func() { close(w.done) })
		w.mu.Lock()
		w.queue = nil
		w.mu.Unlock()
		<-idle
		return ctx.Err()
	}
}
