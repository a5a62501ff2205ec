package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
)

// Texts of the shared-instructions and repeated-request scenarios: a shop
// whose system prompt states its return policy, and a support bot whose
// canned answer words the policy the same way.
const (
	shopPolicy = "You are the assistant of Lumenfold, an online shop for home lighting. Returns: unused lamps can be returned within thirty days of delivery in their original packaging, and refunds reach the original payment method within five working days of the return being checked. Never ask for a card number."
	returnQ    = "Can I return a lamp I bought last week?"
	returnA    = "Yes: unused lamps can be returned within thirty days of delivery in their original packaging. Book the pickup from your order page."
)

// TestSharedInstructions: material that the instructions (system or
// developer texts) of exchanges of two or more principals hold is an
// application's shared instructions, not foreign, whoever else holds it;
// held by the instructions of one principal only, by requests of unknown
// principals, or in another principal's own text, it is still caught
// (controls). On the memory store and on Redis, whole and streamed.
func TestSharedInstructions(t *testing.T) {
	sys := func(id, principal string) step {
		return step{id: id, principal: principal, texts: []string{shopPolicy, "Where is my order?"}, roles: []string{"system", "user"}, answer: "Noted."}
	}
	dev := func(id, principal string) step {
		st := sys(id, principal)
		st.roles = []string{"developer", "user"}
		return st
	}
	pasted := func(id, principal string) step {
		return step{id: id, principal: principal, texts: []string{helpSystem, "Please check this policy: " + shopPolicy}, roles: []string{"system", "user"}, answer: "Noted."}
	}
	// caught: by default (the organisation's instructions), and with
	// PrivateInstructions (each principal's own).
	tests := []struct {
		name           string
		sources        []step
		principal      string // the victim's
		caught, strict bool
	}{
		{"system prompt of two principals", []step{sys("s1", "tenant-a"), sys("s2", "tenant-b")}, "tenant-c", false, false},
		{"developer instructions of two principals", []step{dev("s1", "tenant-a"), dev("s2", "tenant-b")}, "tenant-c", false, false},
		{"system prompt of two principals, victim's principal unknown", []step{sys("s1", "tenant-a"), sys("s2", "tenant-b")}, "", false, false},
		{"system prompt of two principals, and pasted by a third", []step{sys("s1", "tenant-a"), sys("s2", "tenant-b"), pasted("s3", "tenant-d")}, "tenant-c", false, false},
		{"system prompt of one principal, sent twice", []step{sys("s1", "tenant-a"), sys("s2", "tenant-a")}, "tenant-c", false, true},
		{"system prompt of one principal, pasted by another", []step{sys("s1", "tenant-a"), pasted("s2", "tenant-b")}, "tenant-c", false, true},
		{"system prompt of principals unknown", []step{sys("s1", ""), sys("s2", "")}, "tenant-c", false, true},
		{"a user's text of another principal (control)", []step{pasted("s1", "tenant-a")}, "tenant-c", true, true},
	}
	for _, sk := range storeKinds(t) {
		for _, tt := range tests {
			for _, streamed := range []bool{false, true} {
				for _, private := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%s/streamed=%v/private=%v", sk.name, tt.name, streamed, private), func(t *testing.T) {
						tt := tt
						if private {
							tt.caught = tt.strict
						}
						v := newTestVerifier(t, Options{Store: sk.new(), PrivateInstructions: private})
						victim := step{id: "victim", principal: tt.principal, texts: []string{helpSystem, returnQ}, roles: []string{"system", "user"}, answer: returnA}
						sigs := play(t, v, append(slices.Clone(tt.sources), victim), streamed)
						for i, got := range sigs[:len(tt.sources)] {
							if len(got) != 0 {
								t.Fatalf("source %s: %+v", tt.sources[i].id, got)
							}
						}
						got := sigs[len(tt.sources)]
						if !tt.caught {
							if len(got) != 0 {
								t.Fatalf("signals %+v, want none", got)
							}
							return
						}
						if len(got) == 0 {
							t.Fatal("no signal: the policy's wording from a single principal's instructions went through")
						}
						for _, sg := range got {
							if sg.ID != policies.SignalCrossExchange || len(sg.Sources) != 1 || !strings.HasPrefix(sg.Sources[0], "s") ||
								!strings.Contains(sg.Message, "request of exchange "+sg.Sources[0]) {
								t.Fatalf("signal %+v, want a cross-exchange signal naming a source's request", sg)
							}
						}
					})
				}
			}
		}
	}
}

// TestRepeatedRequests: a response cache keyed on the question serves one
// exchange's answer, its canary line echoed by the model, to another. The
// canary (and the text of its line) is not foreign when every text of its
// exchange's request is one of the victim's (the same question, as
// written or in another case; a conversation continuing it). Controls: a
// request that only shares the system prompt (related by the fingerprint
// share, still caught), one that held more than the victim's, and one
// whose answer was refused (nothing recorded) raise an inbound.canary
// naming the source. On the memory store and on Redis, whole and
// streamed.
func TestRepeatedRequests(t *testing.T) {
	tests := []struct {
		name      string
		srcTexts  []string
		srcEnd    inbound.End
		principal string // both exchanges'
		texts     []string
		caught    bool
	}{
		{"the same request", []string{helpSystem, faqQuestion}, inbound.End{}, "tenant", []string{helpSystem, faqQuestion}, false},
		{"the same request, principals unknown", []string{helpSystem, faqQuestion}, inbound.End{}, "", []string{helpSystem, faqQuestion}, false},
		{"the same question in another case", []string{helpSystem, faqQuestion}, inbound.End{}, "tenant", []string{helpSystem, "HOW do refunds work"}, false},
		{"a conversation continuing it", []string{helpSystem, faqQuestion}, inbound.End{}, "tenant", []string{helpSystem, faqQuestion, faqAnswer, "And for a gift card?"}, false},
		{"the same system prompt, another question (control)", []string{helpSystem, faqQuestion}, inbound.End{}, "tenant", []string{helpSystem, "Do you ship to Norway?"}, true},
		{"its request held more (control)", []string{helpSystem, "Order 7731 for Dr Quentin Imbert is late.", faqQuestion}, inbound.End{}, "tenant", []string{helpSystem, faqQuestion}, true},
		{"its answer was refused (control)", []string{helpSystem, faqQuestion}, inbound.End{Refused: true}, "tenant", []string{helpSystem, faqQuestion}, true},
	}
	for _, sk := range storeKinds(t) {
		for _, tt := range tests {
			for _, streamed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/streamed=%v", sk.name, tt.name, streamed), func(t *testing.T) {
					v := newTestVerifier(t, Options{Store: sk.new()})
					principal := func(p string) string {
						if tt.principal == "" {
							return ""
						}
						return tt.principal + "-" + p
					}
					roles := func(texts []string) []string {
						r := make([]string, len(texts))
						for i := range r {
							r[i] = "user"
						}
						r[0] = "system"
						return r
					}
					// The model quoted its prompt, canary line included;
					// the cache serves that answer to both.
					cached := faqAnswer + " " + CanaryLine(v.Mint("src"))
					sigs := play(t, v, []step{
						{id: "src", principal: principal("a"), texts: tt.srcTexts, roles: roles(tt.srcTexts), canary: true, answer: faqAnswer, end: tt.srcEnd},
						{id: "victim", principal: principal("b"), texts: tt.texts, roles: roles(tt.texts), canary: true, answer: cached},
					}, streamed)
					if len(sigs[0]) != 0 {
						t.Fatalf("source: %+v", sigs[0])
					}
					got := sigs[1]
					if !tt.caught {
						if len(got) != 0 {
							t.Fatalf("signals %+v, want none", got)
						}
						return
					}
					ok := false
					for _, sg := range got {
						ok = ok || sg.ID == policies.SignalCanary && slices.Equal(sg.Sources, []string{"src"})
					}
					if !ok {
						t.Fatalf("signals %+v, want an inbound.canary naming src", got)
					}
				})
			}
		}
	}
}

// TestOwnTextRespliced: an answer that quotes its own prompt in pieces,
// cut and joined as another answer joined the same pieces of its own
// (the same system prompt and question around different documents), is
// not foreign: what the two answers share is where the pieces join. The
// pieces may be shorter than a k-gram (one word of the prompt said over
// and over). The control sends the same answer to a request without those
// pieces: then it is another exchange's text, caught. On the memory store
// and on Redis, whole and streamed.
func TestOwnTextRespliced(t *testing.T) {
	const (
		docSystem = "You answer questions about documentation."
		question  = "What are the conditions mentioned in this passage?"
		// The pieces of the prompt the model read back, joined.
		pieces = " questions about documentation.\n are the conditions mentioned in this passage?\n  context only.\n\n"
		// One word of the prompt, over and over.
		oneWord = " You answer questions about documentation.\n documentation.\n documentation.\n documentation.\n passage?\n"
	)
	user := func(doc, q string) string {
		return "Answer from the context only.\n\nContext:\n" + doc + "\n\nQuestion: " + q
	}
	long := func(seed uint64) string { return newGen(seed, 11).sentences(900) }
	other := []string{"You summarise release notes for the team.", "List the changes in: " + long(2)}
	tests := []struct {
		name, answer string
		texts        []string
		caught       bool
	}{
		{"the same prompt around another document", pieces, []string{docSystem, user(long(2), question)}, false},
		{"another prompt (control)", pieces, other, true},
		{"one word said over and over", oneWord, []string{docSystem, user(long(2), question)}, false},
		{"one word said over and over, another prompt (control)", oneWord, other, true},
	}
	for _, sk := range storeKinds(t) {
		for _, tt := range tests {
			for _, streamed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/streamed=%v", sk.name, tt.name, streamed), func(t *testing.T) {
					v := newTestVerifier(t, Options{Store: sk.new()})
					sigs := play(t, v, []step{
						{id: "first", principal: "tenant-a", texts: []string{docSystem, user(long(1), question)}, roles: []string{"system", "user"}, answer: tt.answer},
						{id: "second", principal: "tenant-b", texts: tt.texts, roles: []string{"system", "user"}, answer: tt.answer},
					}, streamed)
					if len(sigs[0]) != 0 {
						t.Fatalf("first: %+v", sigs[0])
					}
					got := sigs[1]
					if !tt.caught {
						if len(got) != 0 {
							t.Fatalf("signals %+v, want none", got)
						}
						return
					}
					if len(got) != 1 || got[0].ID != policies.SignalCrossExchange || !slices.Equal(got[0].Sources, []string{"first"}) {
						t.Fatalf("signals %+v, want one cross-exchange signal naming first", got)
					}
				})
			}
		}
	}
}

// TestOwnPhraseRecast: a phrase the request holds, which the detectors do
// not take for a value where it stands, is not foreign when the answer sets
// it where they do (alone on its line, a banner); a banner the request does
// not hold still is.
func TestOwnPhraseRecast(t *testing.T) {
	const req = "Summarise the package documentation: the parser is for internal use only and its API may change between releases."
	tests := []struct {
		name, answer string
		foreign      bool
	}{
		{"own phrase alone on its line", "Summary of the parser:\nfor internal use only\nIts API may change between releases.", false},
		{"own phrase in capitals", "Summary:\nFOR INTERNAL USE ONLY\nThe API may change.", false},
		{"another banner (control)", "Summary:\nSTRICTLY CONFIDENTIAL\nThe API may change.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, sigs := foreignEntity(t, req, tt.answer, "marker.classification"); got != tt.foreign {
				t.Errorf("foreign banner %v, want %v (%+v)", got, tt.foreign, sigs)
			}
		})
	}
}

// foreignEntity checks answer against a request of the one text req and
// reports whether a foreign-entity signal of detector came out.
func foreignEntity(t *testing.T, req, answer, detector string) (bool, []Signal) {
	t.Helper()
	v := newTestVerifier(t, Options{})
	vd, err := v.Check(context.Background(), &inbound.Exchange{ID: "x", Texts: []string{req}}, answer, inbound.End{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range vd.Signals {
		if s.ID == policies.SignalForeignEntity && s.Detector == detector {
			return true, vd.Signals
		}
	}
	return false, vd.Signals
}

// TestOwnNumbersJoined: numbers of the request, which the answer sets side
// by side where a detector takes them for a phone number (a model listing
// the fields of a date layout), are the user's own; a phone number whose
// groups the request does not hold is foreign.
func TestOwnNumbersJoined(t *testing.T) {
	const req = "In the layout 2006-01-02T15:04:05Z07:00 the year is 2006 or 06, the zone offset -0700, " +
		"and the fields 12, 34, 56 and 78 are minutes in other examples."
	tests := []struct {
		name, answer string
		foreign      bool
	}{
		{"offsets side by side", "The offsets are 0700  -0700 here.", false},
		{"two-digit fields side by side", "The fields: 06 12 34 56 78 in order.", false},
		{"a phone number the request does not hold (control)", "Call 06 12 34 56 79 in order.", true},
		{"another phone number (control)", "Call +33 1 42 68 53 00 now.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, sigs := foreignEntity(t, req, tt.answer, "pii.phone"); got != tt.foreign {
				t.Errorf("foreign phone %v, want %v (%+v)", got, tt.foreign, sigs)
			}
		})
	}
}

// TestRepeatedRequestInFlight: a response cache serves exchange src's
// answer, its canary line echoed, to the same question asked by another
// caller as soon as the upstream answered, before src's own session has
// verified that answer and closed. The repeated request is recognised all
// the same (its texts were recorded with src's request); once src's
// answer is refused, the same cached answer raises src's canary.
func TestRepeatedRequestInFlight(t *testing.T) {
	ctx := context.Background()
	for _, sk := range storeKinds(t) {
		t.Run(sk.name, func(t *testing.T) {
			v := newTestVerifier(t, Options{Store: sk.new()})
			texts, roles := []string{helpSystem, faqQuestion}, []string{"system", "user"}
			exchange := func(id, principal string) *inbound.Exchange {
				ex := &inbound.Exchange{ID: id, Principal: principal, Texts: texts, Roles: roles}
				ex.Canary = CanaryLine(v.Mint(id))
				ex.Sent = append(slices.Clone(texts), ex.Canary)
				return ex
			}
			cached := faqAnswer + " " + CanaryLine(v.Mint("src"))
			src, err := v.Begin(ctx, exchange("src", "tenant-a"))
			if err != nil {
				t.Fatal(err)
			}
			for i, victim := range []string{"early", "late"} {
				if i == 1 {
					// src's answer turns out contaminated and is refused.
					if _, err := src.Close(ctx, inbound.End{Refused: true}); err != nil {
						t.Fatal(err)
					}
				}
				vd, err := v.Check(ctx, exchange(victim, "tenant-b"), cached, inbound.End{FinishReason: "stop"})
				if err != nil {
					t.Fatal(err)
				}
				canary := slices.ContainsFunc(vd.Signals, func(s Signal) bool { return s.ID == policies.SignalCanary })
				if canary != (victim == "late") {
					t.Errorf("%s: signals %+v; want src's canary only once src's answer was refused", victim, vd.Signals)
				}
			}
		})
	}
}
