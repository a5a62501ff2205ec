package verify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/inbound"
)

// step is one exchange of a scenario: its request (with the roles of its
// texts, and the canary the guard places, when asked), the answer the
// model gave, and how the response ended (zero: finish reason "stop").
type step struct {
	id, principal string
	texts         []string
	roles         []string
	canary        bool
	answer        string
	end           inbound.End
}

// storeKinds returns the stores a scenario runs on: the default memory
// store, and a Redis store (a real redis-server, see internal/redistest)
// under a namespace of its own per call.
func storeKinds(t *testing.T) []struct {
	name string
	new  func() fingerprint.Store
} {
	t.Helper()
	var ns atomic.Int64
	var c func() fingerprint.Store
	return []struct {
		name string
		new  func() fingerprint.Store
	}{
		{"memory", func() fingerprint.Store { return nil }},
		{"redis", func() fingerprint.Store {
			if c == nil {
				client := redistest.Client(t)
				c = func() fingerprint.Store {
					return fingerprint.NewRedisStore(client, fingerprint.RedisOptions{Key: testStoreKey, Namespace: fmt.Sprint("prov-", ns.Add(1))})
				}
			}
			return c()
		}},
	}
}

// play runs steps in order through v, each answer checked whole or
// streamed in pieces of 7 bytes (closed with the step's end, refused when
// the stream stopped), and returns each step's signals.
func play(t *testing.T, v *Verifier, steps []step, streamed bool) [][]Signal {
	t.Helper()
	ctx := context.Background()
	out := make([][]Signal, len(steps))
	for i, st := range steps {
		end := st.end
		if !end.Truncated && !end.Refused && end.FinishReason == "" {
			end.FinishReason = "stop"
		}
		ex := &inbound.Exchange{ID: st.id, Principal: st.principal, Texts: st.texts, Roles: st.roles}
		if st.canary {
			// As the guard places it: a text of its own, sent last.
			ex.Canary = CanaryLine(v.Mint(st.id))
			ex.Sent = append(slices.Clone(st.texts), ex.Canary)
		}
		var vd *Verdict
		var err error
		if streamed {
			var s *Stream
			if s, err = v.Stream(ctx, ex); err != nil {
				t.Fatal(err)
			}
			for p := st.answer; len(p) > 0; p = p[min(len(p), 7):] {
				if _, stop, err := s.Write(ctx, inbound.Delta{Text: p[:min(len(p), 7)]}); err != nil {
					t.Fatal(err)
				} else if stop {
					break
				}
			}
			_, vd, err = s.Close(ctx, end)
		} else {
			vd, err = v.Check(ctx, ex, st.answer, end)
		}
		if err != nil {
			t.Fatalf("%s: %v", st.id, err)
		}
		out[i] = vd.Signals
	}
	return out
}

// Texts of the scenarios: an online lighting shop's help centre, its
// changelog, an HR benefits assistant, a travel policy, a supplier e-mail.
const (
	faqQuestion = "How do refunds work?"
	faqAnswer   = "Refunds go back to the original payment method within five to ten business days after our warehouse receives the returned lamp. You can follow each refund from the Orders page of your Lumenfold account."
	helpSystem  = "You are the help centre assistant of Lumenfold, an online shop for home lighting. Answer only from the help centre articles, in two or three sentences, and link the article you used."

	changelogTemplate = "Rewrite the following product fact as one friendly sentence for the public changelog: "
	changelogOpen     = "Good news from the Lumenfold team: "
	changelogClose    = " Thanks for helping us make Lumenfold brighter, one release at a time, and tell us what you think in the community forum!"

	benefitsSystem = "You are the benefits assistant of Northwind Logistics. You answer employees' questions about the 2026 benefits handbook only: health cover, dental and optical allowances, the pension plan, parental leave, the cycle-to-work scheme, meal vouchers and the annual wellbeing budget. Quote amounts exactly as the handbook gives them and never estimate. If a question is about pay, performance or a personal dispute, say that it is outside your remit and point the employee to their HR business partner. Keep every answer under one hundred words and end it with the standard reminder about confirming with HR."
	benefitsStock  = "As your Northwind benefits assistant I can only answer from the 2026 benefits handbook, so please confirm anything unusual with your HR business partner before you rely on it."

	travelPolicy = "Travel policy, revision 7 (applies from 1 February 2026). Economy class is the rule for every flight under six hours; premium economy is allowed above six hours, business class only with the written approval of a director. Hotel nights are reimbursed up to 160 euros in Paris, London and Zurich and up to 120 euros elsewhere, breakfast included. Rail is preferred to air for any journey under four hours door to door. Taxis are reimbursed between 22:00 and 06:00 or when carrying equipment over 15 kilograms; otherwise use public transport or the corporate car-sharing account. Per diem for meals is 45 euros a day abroad and 35 euros in the home country. Claims go through the expense tool within 30 days of return, with every receipt attached; late claims need the cost centre manager's approval."
	ragSystem    = "Answer the employee's question using only the document provided. Cite the rule you rely on."
)

// changelogFacts are short inputs of the changelog template.
var changelogFacts = []string{
	"The export button now supports CSV and XLSX.",
	"Dimmer schedules sync across all your devices.",
	"Search finds lamps by colour temperature.",
	"Wishlists can be shared with a single link.",
	"Order history loads twice as fast on mobile.",
	"Gift cards can be split across two orders.",
	"The bulb finder now covers GU10 and E14 bases.",
	"Returns can be started from the order email.",
	"Dark mode follows your system setting.",
	"Delivery slots show the driver's live position.",
	"Reviews can include up to six photos.",
	"The app remembers your preferred store.",
	"Smart plugs pair in under ten seconds.",
	"Invoices are available as PDF downloads.",
	"Stock alerts arrive as push notifications.",
	"Bundles show the saving before checkout.",
	"Customer service chat is open on Sundays.",
	"The cart keeps items for thirty days.",
	"Lamp shades can be filtered by diameter.",
	"Checkout supports Apple Pay and Google Pay.",
	"Installers can be booked for ceiling lights.",
	"Energy labels appear on every product page.",
	"The scene editor supports twelve presets.",
	"Accounts can have two factor authentication.",
	"Outdoor lights are tagged with their IP rating.",
	"Order tracking works without an account.",
	"Warranty claims can be filed in the app.",
	"Product videos play without sound by default.",
	"The loyalty balance shows on the home screen.",
	"Click and collect orders are ready in two hours.",
}

// provenanceScenarios are exchanges whose answers repeat what the model
// said to the same or a similar request, or what the same principal
// already holds: none of it is foreign. Each is also played with every
// request replaced by an unrelated one (control): then the repeated
// material must be caught, which shows that the answers really share it.
func provenanceScenarios() []struct {
	name    string
	steps   []step
	control bool // the control must raise signals
} {
	type scenario = struct {
		name    string
		steps   []step
		control bool
	}
	var out []scenario

	// The same FAQ answer to three principals (a deterministic upstream,
	// temperature 0, or a response cache).
	var faq []step
	for i, p := range []string{"key-alice", "key-bob", "key-chen"} {
		faq = append(faq, step{id: fmt.Sprint("faq-", i), principal: p, texts: []string{faqQuestion}, answer: faqAnswer})
	}
	out = append(out, scenario{"same FAQ answer to three principals", faq, true})

	// The same question, differently capitalised and punctuated.
	var faqCase []step
	for i, q := range []string{"How do refunds work?", "how do refunds work", "HOW DO REFUNDS WORK ??"} {
		faqCase = append(faqCase, step{id: fmt.Sprint("faqc-", i), principal: fmt.Sprint("key-", i), texts: []string{q}, answer: faqAnswer})
	}
	out = append(out, scenario{"same FAQ, question in other case and punctuation", faqCase, true})

	// The question re-worded behind the help centre's system prompt: the
	// system prompt makes most of each request, the requests are related.
	var faqReworded []step
	for i, q := range []string{"How do refunds work?", "How does a refund work?", "What is your refund process?"} {
		faqReworded = append(faqReworded, step{id: fmt.Sprint("faqr-", i), principal: fmt.Sprint("key-", i), texts: []string{helpSystem, q}, answer: faqAnswer})
	}
	out = append(out, scenario{"FAQ re-worded behind a shared system prompt", faqReworded, true})

	// Regenerate and retry: the identical request again, the answer
	// different but in the same words, or identical; a first attempt cut
	// by a timeout.
	const regenQ = "Suggest a short product description for the Aalto brass floor lamp with a linen shade."
	out = append(out, scenario{"regenerate and retry", []step{
		{id: "regen-0", texts: []string{regenQ}, answer: "The Aalto floor lamp pairs a slim brushed brass stem with a natural linen shade, casting a warm, glare-free light that suits reading corners and living rooms alike.", end: inbound.End{Truncated: true}},
		{id: "regen-1", texts: []string{regenQ}, answer: "The Aalto floor lamp pairs a slim brushed brass stem with a natural linen shade, casting a warm, glare-free light that suits reading corners and living rooms alike."},
		{id: "regen-2", texts: []string{regenQ}, answer: "Meet Aalto: the floor lamp pairs a slim brushed brass stem with a natural linen shade, casting a warm, glare-free light for reading corners."},
		{id: "regen-3", texts: []string{regenQ}, answer: "The Aalto floor lamp pairs a slim brushed brass stem with a natural linen shade, casting a warm, glare-free light that suits reading corners and living rooms alike."},
	}, true})

	// One instruction template over 30 short inputs, by one caller (the
	// issue: 24 of 30 refused) and by callers the guard does not know.
	for _, principal := range []string{"key-docs-team", ""} {
		var tmpl []step
		for i, f := range changelogFacts {
			tmpl = append(tmpl, step{id: fmt.Sprintf("tmpl-%q-%d", principal, i), principal: principal,
				texts: []string{changelogTemplate + f}, answer: changelogOpen + f + changelogClose})
		}
		name := "one template over 30 inputs, one principal"
		if principal == "" {
			name = "one template over 30 inputs, principals unknown"
		}
		out = append(out, scenario{name, tmpl, true})
	}

	// A long shared system prompt before different short questions: the
	// answers repeat the assistant's stock reminder.
	var benefits []step
	for i, qa := range [][2]string{
		{"How much is the optical allowance?", "The optical allowance is 250 euros every two years for frames or lenses."},
		{"Can I join the cycle-to-work scheme mid-year?", "Yes, you can join the cycle-to-work scheme in any month; the saving starts with the next payroll."},
		{"How long is parental leave for the second parent?", "The second parent gets sixteen weeks of paid parental leave, to be taken within a year of the birth."},
		{"Are meal vouchers taxed?", "Meal vouchers up to 7.50 euros a working day are tax free; anything above is added to gross pay."},
	} {
		benefits = append(benefits, step{id: fmt.Sprint("hr-", i), principal: fmt.Sprint("employee-", i),
			texts: []string{benefitsSystem, qa[0]}, answer: qa[1] + " " + benefitsStock})
	}
	out = append(out, scenario{"shared long system prompt, different questions", benefits, true})

	// Several users' retrieval-augmented requests quoting the same
	// document, and answers quoting it (and repeating its wording).
	var rag []step
	for i, qa := range [][2]string{
		{"Can I take a taxi from the airport at 23:30?", "Yes. The rule you need: Taxis are reimbursed between 22:00 and 06:00 or when carrying equipment over 15 kilograms; otherwise use public transport or the corporate car-sharing account."},
		{"What is the hotel limit in Zurich?", "Hotel nights are reimbursed up to 160 euros in Paris, London and Zurich and up to 120 euros elsewhere, breakfast included, so Zurich allows 160 euros."},
		{"I carry a 20 kg demo kit, can I expense a taxi?", "Yes: taxis are reimbursed between 22:00 and 06:00 or when carrying equipment over 15 kilograms; otherwise use public transport or the corporate car-sharing account."},
		{"When must I file my claim?", "Claims go through the expense tool within 30 days of return, with every receipt attached; late claims need the cost centre manager's approval."},
	} {
		rag = append(rag, step{id: fmt.Sprint("rag-", i), principal: fmt.Sprint("user-", i),
			texts: []string{ragSystem, "Document:\n" + travelPolicy, qa[0]}, answer: qa[1]})
	}
	out = append(out, scenario{"RAG over the same document", rag, true})

	// A conversation that resends its history each turn; answers recap
	// the earlier ones.
	const (
		u1 = "Plan a lighting layout for a 24 square metre living room with a reading corner."
		a1 = "Start with a dimmable ceiling fixture of about 2500 lumens in the centre, add two wall washers on the long wall, and put a 3000 K floor lamp with a directional head beside the reading chair."
		u2 = "Make it warmer and cheaper."
		a2 = "Here is the cheaper version: start with a dimmable ceiling fixture of about 2500 lumens in the centre, add two wall washers on the long wall, and keep everything at 2700 K with LED bulbs from the Basic range."
		u3 = "Now give me a shopping list."
		a3 = "Shopping list: a dimmable ceiling fixture of about 2500 lumens, two wall washers for the long wall, one floor lamp with a directional head, and six LED bulbs at 2700 K from the Basic range."
	)
	out = append(out, scenario{"multi-turn conversation resending its history", []step{
		{id: "chat-1", texts: []string{u1}, answer: a1},
		{id: "chat-2", texts: []string{u1, a1, u2}, answer: a2},
		{id: "chat-3", texts: []string{u1, a1, u2, a2, u3}, answer: a3},
	}, true})

	// The same principal continuing a conversation server-side
	// (previous_response_id): nothing resent, the answer repeats the
	// earlier answer and the supplier's address from the first request.
	const (
		c1 = "Draft a polite reminder to our supplier Brightwater Optics (orders@brightwater-optics.com) that the 400 linen shades of order PO-77812 are three weeks late."
		r1 = "Dear Brightwater Optics team, we are writing about order PO-77812: the 400 linen shades we expected three weeks ago have not arrived yet. Could you confirm a delivery date by return to orders@brightwater-optics.com? Kind regards."
		c2 = "Shorter please, and firmer."
		r2 = "Order PO-77812: the 400 linen shades we expected three weeks ago have not arrived yet. Please confirm a delivery date by Friday to orders@brightwater-optics.com."
	)
	out = append(out, scenario{"same principal continuing without resending", []step{
		{id: "cont-1", principal: "key-purchasing", texts: []string{c1}, answer: r1},
		{id: "cont-2", principal: "key-purchasing", texts: []string{c2}, answer: r2},
	}, true})
	return out
}

// control returns steps with every request replaced by an unrelated one of
// a principal of its own: a text under 16 bytes (no fingerprint) that no
// other step sends.
func control(steps []step) []step {
	out := make([]step, len(steps))
	for i, st := range steps {
		st.id = "ctl-" + st.id
		st.principal = ""
		st.texts = []string{fmt.Sprintf("Case %d", i)}
		out[i] = st
	}
	return out
}

// TestRepeatedAnswersAreNotForeign plays each scenario of answers that
// repeat what the model said to the same or a similar request, on the
// memory store and on Redis, whole and streamed: no signal. Its control
// (the same answers to unrelated requests) must raise signals.
func TestRepeatedAnswersAreNotForeign(t *testing.T) {
	for _, sk := range storeKinds(t) {
		for _, sc := range provenanceScenarios() {
			for _, streamed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/streamed=%v", sk.name, sc.name, streamed), func(t *testing.T) {
					v := newTestVerifier(t, Options{Store: sk.new()})
					for i, sigs := range play(t, v, sc.steps, streamed) {
						if len(sigs) > 0 {
							t.Errorf("%s: %+v", sc.steps[i].id, sigs)
						}
					}
					if !sc.control {
						return
					}
					v = newTestVerifier(t, Options{Store: sk.new()})
					n := 0
					for _, sigs := range play(t, v, control(sc.steps), streamed) {
						n += len(sigs)
					}
					if n == 0 {
						t.Errorf("control: the answers to unrelated requests raised nothing: the scenario shares nothing")
					}
				})
			}
		}
	}
}

// TestRewordedQuestionWithoutContext pins what happens to the same canned
// answer to a re-worded bare question (no shared system prompt) from
// another principal: the two requests share no fingerprint and differ in
// their texts, so they are not related, and the canned answer (a run of
// another exchange's answer) is cross-exchange material, naming the first
// answer. Behind a shared system prompt, or once more than MaxDocFreq
// exchanges hold the answer, it is not (see provenanceScenarios).
func TestRewordedQuestionWithoutContext(t *testing.T) {
	v := newTestVerifier(t, Options{})
	sigs := play(t, v, []step{
		{id: "q-1", principal: "key-1", texts: []string{"How do refunds work?"}, answer: faqAnswer},
		{id: "q-2", principal: "key-2", texts: []string{"How does a refund work?"}, answer: faqAnswer},
	}, false)
	if len(sigs[0]) != 0 || len(sigs[1]) != 1 || sigs[1][0].ID != policies.SignalCrossExchange ||
		!slices.Equal(sigs[1][0].Sources, []string{"q-1"}) || !strings.Contains(sigs[1][0].Message, "answer of exchange q-1") {
		t.Fatalf("signals %+v", sigs)
	}
	// The same principal asking again is its own material.
	v = newTestVerifier(t, Options{})
	sigs = play(t, v, []step{
		{id: "q-1", principal: "key-1", texts: []string{"How do refunds work?"}, answer: faqAnswer},
		{id: "q-2", principal: "key-1", texts: []string{"How does a refund work?"}, answer: faqAnswer},
	}, false)
	if len(sigs[1]) != 0 {
		t.Fatalf("same principal: %+v", sigs[1])
	}
}

// Foreign material that must still be caught.
const (
	boardMemo     = "Quarterly board memo: the Halden acquisition closes on 14 March at 212 million euros, and the Oslo plant will be sold to Vardo Industrier before the announcement; keep this from the works council until then."
	incidentQ     = "Summarise yesterday's incident for the status page."
	incidentA     = "Between 14:05 and 15:40 UTC the Skagen payment gateway rejected one card payment in five because a certificate on the Frankfurt edge expired; the on-call engineer rotated it and replayed the failed payments."
	bakeryQ       = "What are good names for a bakery in Porto?"
	supplierEmail = "Please call Ingrid Solberg back about the invoice; her address is ingrid.solberg@fjordline-cargo.no."
)

// TestForeignMaterialStillCaught: another exchange's request text (any
// principal but the same), another exchange's answer to an unrelated
// question, another principal's entities and any other exchange's canary
// are still signals, naming their source and saying whether it was its
// request or its answer; the same principal's own material is not.
func TestForeignMaterialStillCaught(t *testing.T) {
	tests := []struct {
		name           string
		srcPrincipal   string
		srcTexts       []string
		srcAnswer      string
		principal      string
		answer         func(v *Verifier) string
		want, detector string // signal ID ("" none) and its detector
		message        string // part of the message
	}{
		{"request text, other principal", "tenant-a", []string{boardMemo}, "Noted.", "tenant-b",
			func(*Verifier) string { return "Here are some ideas. " + boardMemo[21:140] + " Enjoy." },
			policies.SignalCrossExchange, "", "request of exchange src"},
		{"request text, principals unknown", "", []string{boardMemo}, "Noted.", "",
			func(*Verifier) string { return "Here are some ideas. " + boardMemo[21:140] + " Enjoy." },
			policies.SignalCrossExchange, "", "request of exchange src"},
		{"request text, unknown and known principal", "", []string{boardMemo}, "Noted.", "tenant-b",
			func(*Verifier) string { return "Here are some ideas. " + boardMemo[21:140] + " Enjoy." },
			policies.SignalCrossExchange, "", "request of exchange src"},
		{"request text, same principal", "tenant-a", []string{boardMemo}, "Noted.", "tenant-a",
			func(*Verifier) string { return "Here are some ideas. " + boardMemo[21:140] + " Enjoy." },
			"", "", ""},
		{"answer to an unrelated question", "tenant-a", []string{incidentQ}, incidentA, "tenant-b",
			func(*Verifier) string { return "Try Forno Azul or Pão da Ribeira. " + incidentA[:150] },
			policies.SignalCrossExchange, "", "answer of exchange src, to an unrelated request"},
		{"answer to an unrelated question, principals unknown", "", []string{incidentQ}, incidentA, "",
			func(*Verifier) string { return "Try Forno Azul or Pão da Ribeira. " + incidentA[:150] },
			policies.SignalCrossExchange, "", "answer of exchange src"},
		{"answer to an unrelated question, same principal", "tenant-a", []string{incidentQ}, incidentA, "tenant-a",
			func(*Verifier) string { return "Try Forno Azul or Pão da Ribeira. " + incidentA[:150] },
			"", "", ""},
		{"entity of another principal's request", "tenant-a", []string{supplierEmail}, "Noted.", "tenant-b",
			func(*Verifier) string { return "Try Forno Azul, or ask ingrid.solberg@fjordline-cargo.no for ideas." },
			policies.SignalForeignEntity, "pii.email", ""},
		{"entity of the same principal's request", "tenant-a", []string{supplierEmail}, "Noted.", "tenant-a",
			func(*Verifier) string { return "Try Forno Azul, or ask ingrid.solberg@fjordline-cargo.no for ideas." },
			"", "", ""},
		{"canary of another exchange", "tenant-a", []string{"Hello."}, "Hi.", "tenant-b",
			func(v *Verifier) string { return "Try Forno Azul (ref " + v.Mint("src") + ")." },
			policies.SignalCanary, "", "minted for exchange src"},
		{"canary of the same principal's other exchange", "tenant-a", []string{"Hello."}, "Hi.", "tenant-a",
			func(v *Verifier) string { return "Try Forno Azul (ref " + v.Mint("src") + ")." },
			policies.SignalCanary, "", "minted for exchange src"},
	}
	for _, sk := range storeKinds(t) {
		for _, tt := range tests {
			for _, streamed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/streamed=%v", sk.name, tt.name, streamed), func(t *testing.T) {
					v := newTestVerifier(t, Options{Store: sk.new()})
					src := step{id: "src", principal: tt.srcPrincipal, texts: append(slices.Clone(tt.srcTexts), CanaryLine(v.Mint("src"))), answer: tt.srcAnswer}
					sigs := play(t, v, []step{src, {id: "victim", principal: tt.principal, texts: []string{bakeryQ}, answer: tt.answer(v)}}, streamed)
					if len(sigs[0]) != 0 {
						t.Fatalf("source exchange: %+v", sigs[0])
					}
					got := sigs[1]
					if tt.want == "" {
						if len(got) != 0 {
							t.Fatalf("signals %+v, want none", got)
						}
						return
					}
					if len(got) != 1 || got[0].ID != tt.want || got[0].Detector != tt.detector || got[0].Action != policies.SignalBlock ||
						!slices.Equal(got[0].Sources, []string{"src"}) || !strings.Contains(got[0].Message, tt.message) {
						t.Fatalf("signals %+v, want one %s %s from src (%q)", got, tt.want, tt.detector, tt.message)
					}
					if strings.Contains(got[0].Message+got[0].Preview, "tenant-") {
						t.Fatalf("a principal in the signal: %+v", got[0])
					}
				})
			}
		}
	}
}

// TestRefusedAnswerIsNobodysSource replays the wrong culprit: the
// answer to R carries a fragment of tenant A's request and is refused (or
// only flagged); a later answer carrying more of A's request must name A,
// never R, and a short fragment (under MinSpan, over MinAbortSpan) must
// not be pinned on R as an aborted source.
func TestRefusedAnswerIsNobodysSource(t *testing.T) {
	const (
		docA   = "Discharge letter for the general practitioner. Dr Quentin Imbert, pulmonology, treated the community-acquired pneumonia with amoxicillin for seven days under supervision; HbA1c 7.9 percent at admission, insulin adjusted before discharge."
		fragR  = "treated the community-acquired pneumonia with amoxicillin for seven days under supervision"
		fragC  = "Dr Quentin Imbert, pulmonology, treated the community-acquired pneumonia with amoxicillin for seven days"
		shortC = "community-acquired pneumonia with amoxicillin for se"
	)
	for _, sk := range storeKinds(t) {
		for _, tc := range []struct {
			name   string
			action policies.SignalAction
			end    inbound.End // R's end, as the guard reports it
		}{
			{"refused", policies.SignalBlock, inbound.End{Refused: true}},
			{"refused and cut", policies.SignalBlock, inbound.End{Refused: true, Truncated: true}},
			{"flagged only", policies.SignalFlag, inbound.End{FinishReason: "stop"}},
		} {
			for _, streamed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/streamed=%v", sk.name, tc.name, streamed), func(t *testing.T) {
					v := newTestVerifier(t, Options{Store: sk.new(), Inbound: policies.Inbound{Signals: map[string]policies.SignalAction{
						policies.SignalCrossExchange: tc.action, policies.SignalForeignEntity: policies.SignalOff}}})
					sigs := play(t, v, []step{
						{id: "A", principal: "clinic", texts: []string{docA}, answer: "Letter noted."},
						{id: "R", principal: "bakery", texts: []string{bakeryQ}, answer: "Try Forno Azul, or " + fragR + ", or Pão da Ribeira.", end: tc.end},
						{id: "C", principal: "garage", texts: []string{"List three checks before a long drive."}, answer: "Check the tyres; " + fragC + "; then the oil."},
						{id: "D", principal: "school", texts: []string{"Name two poets from Porto."}, answer: "Eugénio de Andrade and " + shortC + " Sophia."},
					}, streamed)
					if len(sigs[1]) != 1 || !slices.Equal(sigs[1][0].Sources, []string{"A"}) {
						t.Fatalf("R: %+v, want one signal naming A", sigs[1])
					}
					if len(sigs[2]) != 1 || !slices.Equal(sigs[2][0].Sources, []string{"A"}) || !strings.Contains(sigs[2][0].Message, "request of exchange A") {
						t.Fatalf("C: %+v, want one signal naming A's request", sigs[2])
					}
					if len(sigs[3]) != 0 {
						t.Fatalf("D: %+v, want none (A completed; R is nobody's source)", sigs[3])
					}
				})
			}
		}
	}
}

// TestCloseRecordsCleanAnswersOnly: an answer becomes a source only when
// clean and complete, and only an engine's incomplete end (not the
// guard's refusal) marks the exchange aborted.
func TestCloseRecordsCleanAnswersOnly(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name              string
		end               inbound.End
		signal            bool // the answer raises a (flag) signal of its own
		recorded, aborted bool
	}{
		{"stop", inbound.End{FinishReason: "stop"}, false, true, false},
		{"no finish reason", inbound.End{}, false, true, false},
		{"length", inbound.End{FinishReason: "length"}, false, true, false},
		{"refused", inbound.End{FinishReason: "stop", Refused: true}, false, false, false},
		{"cut", inbound.End{Truncated: true}, false, false, true},
		{"abort", inbound.End{FinishReason: "abort"}, false, false, true},
		{"error", inbound.End{FinishReason: "error"}, false, false, true},
		{"cancelled", inbound.End{FinishReason: "Cancelled"}, false, false, true},
		{"refused and cut", inbound.End{Truncated: true, Refused: true}, false, false, false},
		{"flagged", inbound.End{FinishReason: "stop"}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newTestVerifier(t, Options{Inbound: policies.Inbound{Signals: map[string]policies.SignalAction{
				policies.SignalTemplateFragment: policies.SignalFlag}}})
			answer := incidentA
			if tc.signal {
				answer += " <|im_end|>"
			}
			if _, err := v.Check(ctx, &inbound.Exchange{ID: "first", Texts: []string{incidentQ}}, answer, tc.end); err != nil {
				t.Fatal(err)
			}
			vd, err := v.Check(ctx, &inbound.Exchange{ID: "second", Texts: []string{bakeryQ}}, "Try Forno Azul. "+incidentA, inbound.End{FinishReason: "stop"})
			if err != nil {
				t.Fatal(err)
			}
			if got := vd.Contaminated(); got != tc.recorded {
				t.Errorf("the answer was a source: %v, want %v (%+v)", got, tc.recorded, vd.Signals)
			}
			hs, err := v.store.Lookup(ctx, []uint64{abortKey("first", v.abortSlot(v.now()))})
			if err != nil {
				t.Fatal(err)
			}
			if got := hs[0].Count > 0; got != tc.aborted {
				t.Errorf("marked aborted: %v, want %v", got, tc.aborted)
			}
		})
	}
}

// TestHolderNames checks the holder names' round trip, that names written
// by others are requests of a principal of their own, and that no raw
// principal reaches the store (Redis: every member of every key).
func TestHolderNames(t *testing.T) {
	v := newTestVerifier(t, Options{})
	tag := v.principalTag("sk-live-0123456789")
	if len(tag) != ptagLen || !isHex(tag) || strings.Contains(tag, "0123456789") || tag != v.principalTag("sk-live-0123456789") ||
		tag == v.principalTag("sk-live-0123456780") || v.principalTag("") != "" {
		t.Fatalf("tag %q", tag)
	}
	for _, tc := range []struct {
		name string
		want holder
	}{
		{first(v.requestHolder("9f2c", "")), holder{known: true, id: "9f2c", n: -1}},
		{first(v.requestHolder("9f2c", "sk-live-0123456789")), holder{known: true, id: "9f2c", ptag: tag, n: -1}},
		{instructionHolder("9f2c", tag), holder{known: true, id: "9f2c", instr: true, ptag: tag, n: -1}},
		{answerHolder("9f2c", tag, 3, 97), holder{known: true, id: "9f2c", answer: true, ptag: tag, level: 3, n: 97}},
		{answerHolder("9f2c", "", 0, 5), holder{known: true, id: "9f2c", answer: true, n: 5}},
		{answerHolder("a~b", "", 0, 5), holder{known: true, id: "a~b", answer: true, n: 5}},
		{"ex~qnothex", holder{known: true, id: "ex~qnothex", n: -1}},
		{"ex~i", holder{known: true, id: "ex", instr: true, n: -1}},
		{"ex~a.x.1", holder{known: true, id: "ex~a.x.1", n: -1}},
		{"ex~", holder{known: true, id: "ex~", n: -1}},
		{"aborted:ex", holder{known: true, id: "aborted:ex", n: -1}},
	} {
		if got := parseHolder(tc.name); got != tc.want {
			t.Errorf("parseHolder(%q) = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	name := "9f2c~a" + tag + ".3.97"
	if n := testing.AllocsPerRun(100, func() { _ = parseHolder(name) }); n != 0 {
		t.Errorf("parseHolder allocates %v times", n)
	}
	if name, ptag := v.requestHolder("9f2c", "sk-live-0123456789"); ptag != tag || name != "9f2c~q"+tag {
		t.Errorf("requestHolder = %q, %q", name, ptag)
	}
	// The tag is HMAC-SHA256 under CanaryKey, as documented.
	m := hmac.New(sha256.New, testKey)
	m.Write([]byte("aishield-principal\x00sk-live-0123456789"))
	if want := hex.EncodeToString(m.Sum(nil)[:ptagLen/2]); tag != want {
		t.Errorf("tag %s, want %s", tag, want)
	}

	c := redistest.Client(t)
	ctx := context.Background()
	v = newTestVerifier(t, Options{Store: fingerprint.NewRedisStore(c, fingerprint.RedisOptions{Key: testStoreKey, Namespace: "names"})})
	play(t, v, []step{{id: "ex-1", principal: "sk-live-0123456789", texts: []string{changelogTemplate, supplierEmail + " " + changelogFacts[0]},
		roles: []string{"system", "user"}, answer: incidentA}}, false)
	keys, err := c.Keys(ctx, "names:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys %v, %v", keys, err)
	}
	answers, instr := 0, 0
	for _, k := range keys {
		members, err := c.ZRange(ctx, k, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			if strings.Contains(m, "sk-live") || strings.Contains(m, "0123456789") {
				t.Fatalf("raw principal in member %q of %s", m, k)
			}
			// A member is the holder, a dot and its MAC (32 hex digits).
			if len(m) < 33 || m[len(m)-33] != '.' {
				t.Fatalf("member %q carries no MAC", m)
			}
			m = m[:len(m)-33]
			if h := parseHolder(m); h.id != "ex-1" || h.ptag != tag {
				t.Fatalf("member %q", m)
			} else if h.answer {
				answers++
			} else if h.instr {
				instr++
			}
		}
	}
	if answers == 0 || instr == 0 {
		t.Fatalf("recorded %d fingerprints of the answer and %d of the instructions only, want some of each", answers, instr)
	}
}

func first(a, _ string) string { return a }

// TestRelatedRequests checks the relatedness rule on requests of known
// shapes (see provenance.go), on both sides of its threshold, and with
// requests large enough to be sampled.
func TestRelatedRequests(t *testing.T) {
	long := func(seed uint64, n int) string { return newGen(seed, 7).sentences(n) }
	sys := long(1, 400)
	tests := []struct {
		name string
		a, b []string
		want bool
	}{
		{"identical short", []string{"How do refunds work?"}, []string{"how do refunds work"}, true},
		{"different short", []string{"How do refunds work?"}, []string{"How does a refund work?"}, false},
		{"template", []string{changelogTemplate + changelogFacts[0]}, []string{changelogTemplate + changelogFacts[1]}, true},
		{"system prompt, short questions", []string{sys, "Who approves my leave?"}, []string{sys, "Is dental covered?"}, true},
		{"system prompt, long own text", []string{sys, long(2, 900)}, []string{sys, long(3, 900)}, false},
		{"continuation (contains the other)", []string{sys, long(4, 3000)}, []string{sys, long(4, 3000), long(5, 6000)}, true},
		{"continuation, the other way", []string{sys, long(4, 3000), long(5, 6000)}, []string{sys, long(4, 3000)}, true},
		{"large, unrelated", []string{long(6, 20000)}, []string{long(7, 20000)}, false},
		{"large, same document", []string{long(8, 20000), "Summarise it."}, []string{long(8, 20000), "List its risks."}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestVerifier(t, Options{})
			ctx := context.Background()
			const answer = "The summary is ready and filed in the team folder under this week's date."
			if _, err := v.Check(ctx, &inbound.Exchange{ID: "a", Texts: tt.a}, answer, inbound.End{FinishReason: "stop"}); err != nil {
				t.Fatal(err)
			}
			s, err := v.begin(ctx, &inbound.Exchange{ID: "b", Texts: tt.b})
			if err != nil {
				t.Fatal(err)
			}
			defer s.release()
			hs, err := v.store.Lookup(ctx, []uint64{fingerprint.OfString(answer, v.opts.Fingerprint)[0].Hash})
			if err != nil || len(hs[0].Exchanges) != 1 {
				t.Fatalf("the answer's holder: %+v, %v", hs, err)
			}
			h := parseHolder(hs[0].Exchanges[0])
			if !h.answer || h.id != "a" {
				t.Fatalf("holder %+v", h)
			}
			got, err := s.related(ctx, &h)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("related = %v, want %v (their sample: level %d, %d fingerprints)", got, tt.want, h.level, h.n)
			}
		})
	}
}

func TestRequestDigest(t *testing.T) {
	same := [][]string{
		{"How do refunds work?"},
		{"  how DO refunds   work"},
		{"How do refunds work ?!"},
	}
	for _, ts := range same[1:] {
		if requestDigest(ts) != requestDigest(same[0]) {
			t.Errorf("%q and %q differ", ts, same[0])
		}
	}
	for _, ts := range [][]string{
		{"How do refunds work"}, // the reference, below
		{"How do refund work"},
		{"How do", "refunds work"},
		{"Howdo refunds work"},
		{"Ça marche?"},
		{},
	}[1:] {
		if requestDigest(ts) == requestDigest([]string{"How do refunds work"}) {
			t.Errorf("%q has the digest of another text", ts)
		}
	}
	if requestDigest([]string{"ÉTÉ"}) != requestDigest([]string{"été"}) {
		t.Error("case folding of non-ASCII letters")
	}
}

// TestHolderIndex: holders are resolved once and found again by ref,
// through growth of the index, as a busy store's lookups meet them.
func TestHolderIndex(t *testing.T) {
	v := newTestVerifier(t, Options{Store: fingerprint.NewRedisStore(nil, fingerprint.RedisOptions{Key: testStoreKey})}) // names path; never called
	s := &session{v: v, ex: &inbound.Exchange{ID: "self"}, scratch: v.getScratch()}
	for i := range 300 {
		s.names = append(s.names, answerHolder(fmt.Sprint("ex-", i), "", i%5, i))
	}
	order := newGen(3, 3).r.Perm(300)
	for round := range 2 {
		for _, i := range order {
			h := s.holderOf(fingerprint.Ref(i + 1))
			if !h.known || !h.answer || h.id != fmt.Sprint("ex-", i) || h.n != i || h.ref != fingerprint.Ref(i+1) {
				t.Fatalf("round %d: holder %d = %+v", round, i, h)
			}
		}
	}
	if len(s.holders) != 300 {
		t.Fatalf("%d holders resolved for 300", len(s.holders))
	}
	if h := s.holderOf(301); h.known {
		t.Fatalf("unknown ref: %+v", h)
	}
}
