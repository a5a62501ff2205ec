package quarantine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aishield/aishield/policies"
)

// Event types.
const (
	// EventTripped: a destination was quarantined.
	EventTripped = "quarantine.tripped"
	// EventCleared: a destination's quarantine ended (cleared by a person,
	// or its duration ran out).
	EventCleared = "quarantine.cleared"
)

// Event is a quarantine tripping or clearing, as a Monitor reports it to
// its OnEvent callback and posts it to the policy's webhook. It holds no
// value from any request or response.
type Event struct {
	// Type is EventTripped or EventCleared.
	Type string `json:"type"`
	// Destination is the destination's name; Policy the policy's.
	Destination string `json:"destination"`
	Policy      string `json:"policy"`
	// Time is when this process saw the change.
	Time time.Time `json:"time"`
	// Since is when the quarantine tripped; Until when it ends by itself
	// (zero: until cleared).
	Since time.Time `json:"since"`
	Until time.Time `json:"until,omitzero"`
	// Exchange is the exchange whose answer tripped it.
	Exchange string `json:"exchange,omitempty"`
	// Signs counts the signs of that answer; Count the counting signs in
	// the window when it tripped.
	Signs map[string]int `json:"signs,omitempty"`
	Count int            `json:"count,omitempty"`
	// Action is what the quarantine does to requests (block, limit,
	// failover).
	Action string `json:"action,omitempty"`
	// Reason says how it changed: "signs" (tripped by signs), "expired",
	// "cleared" (by a person), "observed" (another process sharing the
	// store made the change; this one learnt it).
	Reason string `json:"reason"`
	// Origin reports that this process made the change (only those are
	// posted to the webhook, so one change is posted once).
	Origin bool `json:"origin"`
}

// Options configure a Monitor.
type Options struct {
	// Policy gives each destination's quarantine rules. Required.
	Policy *policies.Policy
	// Store is where health and quarantines are kept; nil keeps them in
	// this process (NewMemoryStore).
	Store Store
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// OnEvent, when set, is called with every change this process makes
	// or learns of, once per change; it must be safe for concurrent use.
	OnEvent func(Event)
	// Client posts webhooks; nil uses a client with a 10-second timeout.
	Client *http.Client
	// WebhookRetries bounds the attempts of one webhook post; 0 means 5.
	WebhookRetries int
	// WebhookBackoff is the wait before the first retry, doubled after
	// each; 0 means 500ms.
	WebhookBackoff time.Duration
}

// Status is a destination's quarantine as a request sees it.
type Status struct {
	// Quarantined reports a quarantine in force.
	Quarantined bool
	// State is the quarantine (when Quarantined).
	State State
	// Quarantine is the destination's quarantine settings.
	Quarantine *policies.Quarantine
	// Unreachable reports that the store could not be read and the
	// destination is taken as quarantined because it was when the store
	// was last read.
	Unreachable error
}

// Monitor applies a policy's quarantine rules. It is safe for concurrent
// use.
type Monitor struct {
	policy  *policies.Policy
	store   Store
	now     func() time.Time
	onEvent func(Event)
	hooks   *webhooks

	mu    sync.Mutex
	known map[string]State // the active quarantines this process last knew of
}

// New returns a Monitor.
func New(opts Options) (*Monitor, error) {
	if opts.Policy == nil {
		return nil, errors.New("quarantine: Options.Policy is required")
	}
	m := &Monitor{policy: opts.Policy, store: opts.Store, now: opts.Now, onEvent: opts.OnEvent, known: map[string]State{}}
	if m.store == nil {
		m.store = NewMemoryStore()
	}
	if m.now == nil {
		m.now = time.Now
	}
	m.hooks = newWebhooks(opts.Client, opts.WebhookRetries, opts.WebhookBackoff)
	return m, nil
}

// Local reports whether the monitor keeps its quarantines in this process
// only (a MemoryStore).
func (m *Monitor) Local() bool {
	_, ok := m.store.(*MemoryStore)
	return ok
}

// Store returns the monitor's store.
func (m *Monitor) Store() Store { return m.store }

// Close waits for the webhooks being posted, until ctx is done.
func (m *Monitor) Close(ctx context.Context) error { return m.hooks.close(ctx) }

func (m *Monitor) rule(dest string) (*policies.Quarantine, Rule) {
	d, ok := m.policy.Destination(dest)
	if !ok {
		d = m.policy.Default
	}
	q := m.policy.Quarantine(d)
	return q, Rule{Signs: q.Signs, Threshold: q.Threshold, Window: q.Window, Duration: q.Duration}
}

// Observe files the signs of one answer of dest. When they trip the
// quarantine, the Monitor reports the event (OnEvent, the webhook) and the
// destination is quarantined for every process sharing the store. A
// destination whose quarantine is off still has its health kept. When the
// store cannot be written, a sign that counts quarantines the destination
// in this process (failing closed), and the error is returned.
func (m *Monitor) Observe(ctx context.Context, dest, exchange string, signs []string) error {
	if len(signs) == 0 {
		return nil
	}
	q, rule := m.rule(dest)
	if q.Off {
		rule.Signs = nil
	}
	now := m.now()
	st, tripped, err := m.store.Observe(ctx, Observation{Destination: dest, Exchange: exchange, Signs: signs, Time: now}, rule)
	if err != nil {
		counts := slices.ContainsFunc(signs, func(s string) bool { return slices.Contains(rule.Signs, s) })
		if counts {
			m.mu.Lock()
			if _, ok := m.known[dest]; !ok {
				m.known[dest] = State{Destination: dest, Since: now, Exchange: exchange, Signs: map[string]int{}}
			}
			m.mu.Unlock()
		}
		return err
	}
	if tripped {
		m.learn(dest, st, true, q)
	}
	return nil
}

// Check returns dest's quarantine status. It reads the store (one round
// trip for a RedisStore), ends a quarantine whose duration ran out, and
// reports changes this process had not seen. When the store cannot be
// read, a destination this process last knew quarantined stays so
// (Status.Unreachable says why); otherwise the error is returned, and the
// caller fails closed.
func (m *Monitor) Check(ctx context.Context, dest string) (Status, error) {
	q, _ := m.rule(dest)
	if q.Off {
		return Status{Quarantine: q}, nil
	}
	st, ok, err := m.store.Get(ctx, dest)
	if err != nil {
		m.mu.Lock()
		known, was := m.known[dest]
		m.mu.Unlock()
		if was {
			return Status{Quarantined: true, State: known, Quarantine: q, Unreachable: err}, nil
		}
		return Status{Quarantine: q}, err
	}
	now := m.now()
	if ok && !st.Active(now) {
		// Ran out: the first process to see it clears it and says so.
		if _, cleared, err := m.store.Clear(ctx, dest, st.Since); err == nil && cleared {
			m.forget(dest, st, "expired", true, q)
		}
		ok = false
	}
	if !ok {
		m.mu.Lock()
		known, was := m.known[dest]
		m.mu.Unlock()
		if was {
			m.forget(dest, known, "observed", false, q)
		}
		return Status{Quarantine: q}, nil
	}
	m.learn(dest, st, false, q)
	return Status{Quarantined: true, State: st, Quarantine: q}, nil
}

// Clear ends dest's quarantine, as a person does after looking; cleared is
// false when there was none.
func (m *Monitor) Clear(ctx context.Context, dest string) (State, bool, error) {
	q, _ := m.rule(dest)
	st, cleared, err := m.store.Clear(ctx, dest, time.Time{})
	if err != nil || !cleared {
		return st, cleared, err
	}
	m.forget(dest, st, "cleared", true, q)
	return st, true, nil
}

// Health lists what the store knows of every destination.
func (m *Monitor) Health(ctx context.Context) ([]Health, error) { return m.store.Health(ctx) }

// learn records that dest is quarantined under st, reporting it when this
// process did not know it yet.
func (m *Monitor) learn(dest string, st State, origin bool, q *policies.Quarantine) {
	m.mu.Lock()
	known, was := m.known[dest]
	m.known[dest] = st
	m.mu.Unlock()
	if was && known.Since.Equal(st.Since) {
		return
	}
	reason := "observed"
	if origin {
		reason = "signs"
	}
	m.report(Event{Type: EventTripped, Destination: dest, Since: st.Since, Until: st.Until, Exchange: st.Exchange,
		Signs: st.Signs, Count: st.Count, Action: string(q.Action), Reason: reason, Origin: origin}, q)
}

// forget records that dest's quarantine st ended.
func (m *Monitor) forget(dest string, st State, reason string, origin bool, q *policies.Quarantine) {
	m.mu.Lock()
	_, was := m.known[dest]
	delete(m.known, dest)
	m.mu.Unlock()
	if !was && !origin {
		return
	}
	m.report(Event{Type: EventCleared, Destination: dest, Since: st.Since, Until: st.Until, Exchange: st.Exchange,
		Action: string(q.Action), Reason: reason, Origin: origin}, q)
}

func (m *Monitor) report(ev Event, q *policies.Quarantine) {
	ev.Policy, ev.Time = m.policy.Name, m.now().UTC()
	ev.Since, ev.Until = ev.Since.UTC(), ev.Until.UTC()
	if m.onEvent != nil {
		m.onEvent(ev)
	}
	if ev.Origin && q.Webhook != "" {
		m.hooks.post(q.Webhook, ev)
	}
}

// Error is returned for a request to a quarantined destination that the
// quarantine refuses.
type Error struct {
	// Destination is the quarantined destination.
	Destination string
	// Since is when it was quarantined.
	Since time.Time
	// Action is the quarantine's action; Level the highest level it lets
	// through (action limit) and RequestLevel the request's.
	Action              policies.QuarantineAction
	Level, RequestLevel string
	// Unreachable, when set, is why the quarantine store could not be read
	// (the destination was quarantined when it last was).
	Unreachable error
	// Local reports that the quarantine is kept in this process only (a
	// MemoryStore): the CLI cannot clear it, a restart does.
	Local bool
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("destination %s is quarantined since %s (signs of a faulty service in its answers)",
		e.Destination, e.Since.UTC().Format(time.RFC3339))
	switch e.Action {
	case policies.QuarantineLimit:
		msg += fmt.Sprintf(": only requests at level %s or below are sent, this one carries %s", e.Level, e.RequestLevel)
	case policies.QuarantineFailover:
		msg += ": its failover destination is quarantined too"
	default:
		msg += ": no request is sent to it"
	}
	if e.Unreachable != nil {
		msg += "; the quarantine store cannot be read, so the quarantine holds until it can (" + e.Unreachable.Error() + ")"
	}
	if e.Local {
		return msg + "; it is kept in this process only: clear it through the guard (Guard.Quarantine().Clear) or restart the process"
	}
	return msg + "; clear it with: aishield quarantine clear " + e.Destination
}
