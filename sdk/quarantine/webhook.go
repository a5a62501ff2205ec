package quarantine

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// webhooks posts events in the background, each retried with exponential
// backoff until it is accepted (a 2xx answer), refused for good (a 4xx
// other than 408 and 429), or out of attempts.
type webhooks struct {
	client  *http.Client
	retries int
	backoff time.Duration
	wg      sync.WaitGroup
	done    chan struct{}
	once    sync.Once
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
	return &webhooks{client: c, retries: retries, backoff: backoff, done: make(chan struct{})}
}

// post sends ev to url in the background.
func (w *webhooks) post(url string, ev Event) {
	body, err := json.Marshal(ev)
	if err != nil {
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		wait := w.backoff
		for attempt := 1; attempt <= w.retries; attempt++ {
			if w.send(url, body) {
				return
			}
			if attempt == w.retries {
				return
			}
			select {
			case <-time.After(wait):
			case <-w.done:
				return
			}
			wait *= 2
		}
	}()
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

// close waits for the posts under way until ctx is done, then stops their
// retries.
func (w *webhooks) close(ctx context.Context) error {
	finished := make(chan struct{})
	go func() { w.wg.Wait(); close(finished) }()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		w.once.Do(func() { close(w.done) })
		<-finished
		return ctx.Err()
	}
}
