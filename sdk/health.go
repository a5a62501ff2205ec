package sdk

import (
	"context"
	"slices"
	"time"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
	"github.com/aishield/aishield/sdk/quarantine"
)

// signsOf returns the signs of a faulty service among sigs, each once.
func signsOf(sigs []Signal) []string {
	var signs []string
	for _, s := range sigs {
		if sign := signOf(s.Signal); sign != "" && !slices.Contains(signs, sign) {
			signs = append(signs, sign)
		}
	}
	return signs
}

// observe files signs, shown by x's answer, in its destination's health,
// which may trip its quarantine.
func (g *Guard) observe(x *Exchange, signs []string) {
	if len(signs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A store that cannot be written leaves the destination quarantined
	// in this process when a sign counts (see quarantine.Monitor.Observe).
	_ = g.monitor.Observe(ctx, x.Destination, x.ID, signs)
}

// signOf returns the sign of a faulty service s is, "" for none.
func signOf(s inbound.Signal) string {
	switch s.ID {
	case policies.SignalForeignPlaceholder:
		return policies.SignForeignPlaceholder
	case policies.SignalCanary:
		return policies.SignForeignCanary
	case policies.SignalCrossExchange:
		return policies.SignForeignText
	case policies.SignalTemplateFragment:
		return policies.SignTemplateFragment
	case policies.SignalForeignEntity:
		return policies.SignForeignEntity
	case policies.SignalUsageMismatch:
		if s.Sign != "" {
			return s.Sign
		}
		return policies.SignDroppedPrompt
	}
	return s.Sign
}

// quarantineEvent writes a quarantine change in the audit trail and
// passes it on.
func (g *Guard) quarantineEvent(ev quarantine.Event) {
	rec := QuarantineEventRecord(ev)
	if g.audit != nil {
		_ = g.audit.Append(rec)
	}
	if g.onRecord != nil {
		g.onRecord(*rec)
	}
	if g.onQuar != nil {
		g.onQuar(ev)
	}
}

// QuarantineEventRecord returns the audit record of a quarantine change:
// the one a guard appends to its trail, and the one a program that clears
// a quarantine itself (as "aishield quarantine clear" does) appends to
// the trail it continues. Like the event, it holds no value from any
// request or response.
func QuarantineEventRecord(ev quarantine.Event) *AuditRecord {
	return &AuditRecord{Time: ev.Time, Exchange: ev.Exchange, Destination: ev.Destination, Event: ev.Type,
		Signs: ev.Signs, Quarantine: &QuarantineRecord{Since: ev.Since, Until: ev.Until, Action: ev.Action, Reason: ev.Reason, Count: ev.Count}}
}
