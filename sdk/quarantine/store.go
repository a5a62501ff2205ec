// Package quarantine keeps, per destination, the signs of a faulty service
// that answers showed (a dropped prompt, another exchange's placeholder or
// canary, another exchange's text, chat-template fragments, an identity
// change inside a response, a contaminated probe) and quarantines the
// destination when the policy's threshold is reached: every process
// sharing the store then stops sending it confidential data until the
// quarantine ends or a person clears it.
//
// A [Monitor] applies a policy's quarantine rules on a [Store]: a
// [MemoryStore] keeps them in one process, a [RedisStore] shares them
// between every proxy and SDK process that uses the same Redis server, and
// survives their restarts. Nothing in a store, an event or a webhook holds a
// value from a request or a response: signs are counted by kind, and an
// exchange is named by its ID.
package quarantine

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// State is a destination's quarantine.
type State struct {
	// Destination is the quarantined destination's name.
	Destination string `json:"destination"`
	// Since is when the quarantine tripped.
	Since time.Time `json:"since"`
	// Until is when it ends by itself; zero lasts until it is cleared.
	Until time.Time `json:"until,omitzero"`
	// Exchange is the exchange whose answer tripped it.
	Exchange string `json:"exchange,omitempty"`
	// Signs counts, by sign, the signs of the answer that tripped it.
	Signs map[string]int `json:"signs"`
	// Count is how many counting signs the window held when it tripped.
	Count int `json:"count"`
}

// Active reports whether the quarantine is in force at now.
func (s State) Active(now time.Time) bool {
	return !s.Since.IsZero() && (s.Until.IsZero() || now.Before(s.Until))
}

// SignStat counts one sign of a destination.
type SignStat struct {
	Count int64     `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// Health is what a store knows of a destination: every sign its answers
// showed, and its quarantine if one is recorded (possibly expired).
type Health struct {
	Destination string              `json:"destination"`
	Signs       map[string]SignStat `json:"signs"`
	State       *State              `json:"quarantine,omitempty"`
}

// Observation is one answer's signs.
type Observation struct {
	// Destination is where the answer came from.
	Destination string
	// Exchange is the exchange's ID.
	Exchange string
	// Signs are the signs the answer showed (each once).
	Signs []string
	// Time is when they were seen.
	Time time.Time
}

// Rule is when a destination is quarantined: Threshold signs among Signs
// within Window quarantine it for Duration (0: until cleared).
type Rule struct {
	Signs     []string
	Threshold int
	Window    time.Duration
	Duration  time.Duration
}

// Store keeps destinations' health and quarantines. Implementations are
// safe for concurrent use.
type Store interface {
	// Observe files obs's signs in its destination's health, counts those
	// rule names within rule.Window, and quarantines the destination when
	// they reach rule.Threshold and no quarantine is in force; tripped
	// reports that this call did. It returns the destination's state
	// afterwards (zero when none).
	Observe(ctx context.Context, obs Observation, rule Rule) (st State, tripped bool, err error)
	// Get returns dest's recorded quarantine (which may have expired); ok
	// is false when none is recorded.
	Get(ctx context.Context, dest string) (st State, ok bool, err error)
	// Clear removes dest's quarantine when it is the one that tripped at
	// since (any one when since is zero) and reports whether it did. Its
	// sign counts within the window restart from zero.
	Clear(ctx context.Context, dest string, since time.Time) (st State, cleared bool, err error)
	// Health lists every destination with a sign or a quarantine, by name.
	Health(ctx context.Context) ([]Health, error)
	// ClaimProbe reports whether the caller may probe dest now: at most
	// one claim succeeds per every, across the store.
	ClaimProbe(ctx context.Context, dest string, every time.Duration) (bool, error)
}

// MemoryStore is a Store in one process. The zero value is not usable; use
// NewMemoryStore.
type MemoryStore struct {
	mu    sync.Mutex
	dests map[string]*memDest
}

type memDest struct {
	signs  map[string]SignStat
	recent []time.Time // times of counting signs, oldest first
	state  *State
	probe  time.Time // when the last probe claim expires
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{dests: map[string]*memDest{}} }

func (m *MemoryStore) dest(name string) *memDest {
	d := m.dests[name]
	if d == nil {
		d = &memDest{signs: map[string]SignStat{}}
		m.dests[name] = d
	}
	return d
}

// Observe implements Store.
func (m *MemoryStore) Observe(_ context.Context, obs Observation, rule Rule) (State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dest(obs.Destination)
	now := obs.Time
	counted := 0
	for _, s := range obs.Signs {
		st := d.signs[s]
		if st.Count == 0 {
			st.First = now
		}
		st.Count++
		st.Last = now
		d.signs[s] = st
		if slices.Contains(rule.Signs, s) {
			counted++
		}
	}
	for range counted {
		d.recent = append(d.recent, now)
	}
	cut := 0
	for cut < len(d.recent) && !d.recent[cut].After(now.Add(-rule.Window)) {
		cut++
	}
	d.recent = d.recent[cut:]
	if n := max(rule.Threshold, 1); len(d.recent) > n {
		d.recent = slices.Clone(d.recent[len(d.recent)-n:])
	}
	if counted > 0 && len(d.recent) >= max(rule.Threshold, 1) && (d.state == nil || !d.state.Active(now)) {
		st := &State{Destination: obs.Destination, Since: now, Exchange: obs.Exchange, Signs: map[string]int{}}
		if rule.Duration > 0 {
			st.Until = now.Add(rule.Duration)
		}
		for _, s := range obs.Signs {
			if slices.Contains(rule.Signs, s) {
				st.Signs[s]++
			}
		}
		st.Count = len(d.recent)
		d.state = st
		return cloneState(*st), true, nil
	}
	if d.state == nil {
		return State{}, false, nil
	}
	return cloneState(*d.state), false, nil
}

// Get implements Store.
func (m *MemoryStore) Get(_ context.Context, dest string) (State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dests[dest]
	if d == nil || d.state == nil {
		return State{}, false, nil
	}
	return cloneState(*d.state), true, nil
}

// Clear implements Store.
func (m *MemoryStore) Clear(_ context.Context, dest string, since time.Time) (State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dests[dest]
	if d == nil || d.state == nil || (!since.IsZero() && !d.state.Since.Equal(since)) {
		return State{}, false, nil
	}
	st := *d.state
	d.state, d.recent = nil, nil
	return st, true, nil
}

// Health implements Store.
func (m *MemoryStore) Health(context.Context) ([]Health, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Health, 0, len(m.dests))
	for name, d := range m.dests {
		if len(d.signs) == 0 && d.state == nil {
			continue
		}
		h := Health{Destination: name, Signs: maps.Clone(d.signs)}
		if d.state != nil {
			st := cloneState(*d.state)
			h.State = &st
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Destination < out[j].Destination })
	return out, nil
}

// ClaimProbe implements Store.
func (m *MemoryStore) ClaimProbe(_ context.Context, dest string, every time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dest(dest)
	now := time.Now()
	if now.Before(d.probe) {
		return false, nil
	}
	d.probe = now.Add(every)
	return true, nil
}

func cloneState(s State) State {
	s.Signs = maps.Clone(s.Signs)
	return s
}
