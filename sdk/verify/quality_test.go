package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aishield/aishield/sdk/inbound"
)

// The generator writes realistic exchanges: shared system prompts, user
// messages with people's contact data and card numbers in business prose,
// and model answers that quote the user's own data, write example values
// and close with stock phrases.

var (
	firstNames = strings.Fields("Jane John Amelie Karim Lucia Marco Sofia Liam Noah Emma Chloe Hugo Ines Yuki Omar Priya Lars Anna Mateo Zoe Felix Nadia Victor Elena Samuel")
	lastNames  = strings.Fields("Doe Martin Dubois Rossi Garcia Novak Schmidt Tanaka Haddad Patel Larsen Moreau Silva Kowalski Jensen Fischer Romano Laurent Weber Costa Nguyen Okafor Berg Lindqvist")
	companies  = strings.Fields("northwind globex initech umbrella-corp stark-ind wayne-ent acme-supply hooli vandelay soylent cyberdyne tyrell wonka-foods oscorp massive-dyn")
	tlds       = strings.Fields("com io fr de co.uk net eu")
	nouns      = strings.Fields("invoice contract shipment ticket report budget forecast roadmap migration audit renewal refund warranty onboarding backlog incident outage release campaign survey appraisal deadline quote proposal inventory payroll subscription")
	verbs      = strings.Fields("review approve escalate postpone summarise reconcile validate draft update cancel schedule confirm prioritise archive negotiate translate forward audit check revise sign file price split merge share track rework finalise publish")
	adjs       = strings.Fields("quarterly urgent pending revised overdue annual regional critical preliminary confidential delayed disputed monthly detailed final partial")
	places     = strings.Fields("Lyon Madrid Oslo Porto Krakow Dublin Turin Ghent Basel Leeds Bergen Seville Utrecht Graz Tampere Nantes Lille Bilbao Aarhus Brno Cork Genoa Malmo Riga Tallinn Vilnius Zagreb Split Bremen Leipzig Aachen Trieste")
	days       = strings.Fields("Monday Tuesday Wednesday Thursday Friday")
	months     = strings.Fields("January February March April May June July August September October November December")
	stock      = []string{
		"Let me know if you have any other questions.",
		"I hope this helps you move forward with the next steps.",
		"Here is a concise summary of the points you raised.",
		"Please double-check the figures before sending anything to the client.",
	}
	systemPrompts = []string{
		"You are a helpful assistant for the customer operations team. Answer concisely, in a professional tone, and never invent figures that are not in the conversation. When unsure, ask a clarifying question.",
		"You are an internal writing aid. Rewrite or summarise what the user gives you, keeping every name, number and date exactly as written. Use short paragraphs and plain English.",
		"You are a finance support bot. Explain billing, invoices and refunds step by step; do not give legal advice; refer disputes to the billing desk.",
	}
)

type person struct{ name, email, phone, card string }

type gen struct{ r *rand.Rand }

func (g gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g gen) luhnCard() string {
	d := make([]int, 16)
	d[0] = 4
	for i := 1; i < 15; i++ {
		d[i] = g.r.IntN(10)
	}
	sum := 0
	for i := 0; i < 15; i++ {
		x := d[i]
		if i%2 == 0 {
			x *= 2
			if x > 9 {
				x -= 9
			}
		}
		sum += x
	}
	d[15] = (10 - sum%10) % 10
	var b strings.Builder
	for i, x := range d {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteByte(byte('0' + x))
	}
	return b.String()
}

func (g gen) person() person {
	f, l := g.pick(firstNames), g.pick(lastNames)
	return person{
		name:  f + " " + l,
		email: fmt.Sprintf("%s.%s%d@%s.%s", strings.ToLower(f), strings.ToLower(l), g.r.IntN(100), g.pick(companies), g.pick(tlds)),
		phone: fmt.Sprintf("+33 6 %02d %02d %02d %02d", g.r.IntN(100), g.r.IntN(100), g.r.IntN(100), g.r.IntN(100)),
		card:  g.luhnCard(),
	}
}

// code is a project or product code name, like the ones real tickets carry.
func (g gen) code() string {
	syl := []string{"ka", "lo", "mi", "ren", "tor", "vex", "sa", "qui", "dra", "nel", "po", "zu", "fen", "gar", "ix", "ul"}
	var b strings.Builder
	for i := 0; i < 2+g.r.IntN(2); i++ {
		b.WriteString(syl[g.r.IntN(len(syl))])
	}
	return strings.ToUpper(b.String()[:1]) + b.String()[1:]
}

func (g gen) sentence() string {
	switch g.r.IntN(7) {
	case 5:
		return fmt.Sprintf("Project %s needs the %s %s signed off by %s %s.", g.code(), g.pick(adjs), g.pick(nouns), g.pick(firstNames), g.pick(lastNames))
	case 6:
		return fmt.Sprintf("Ticket %s-%d about %s %s was reopened in %s.", strings.ToUpper(g.code()[:3]), 100+g.r.IntN(9900), g.pick(nouns), g.code(), g.pick(places))
	case 0:
		return fmt.Sprintf("We need to %s the %s %s of %s for the %s office before %s %d %s.", g.pick(verbs), g.pick(adjs), g.pick(nouns), g.code(), g.pick(places), g.pick(days), 1+g.r.IntN(28), g.pick(months))
	case 1:
		return fmt.Sprintf("The %s %s for %s came to %d.%02d EUR and %s in %s wants to %s it.", g.pick(adjs), g.pick(nouns), g.code(), 100+g.r.IntN(90000), g.r.IntN(100), g.pick(firstNames), g.pick(places), g.pick(verbs))
	case 2:
		return fmt.Sprintf("Can you %s the %s for %s and %s the %s %s by %s?", g.pick(verbs), g.pick(nouns), g.code(), g.pick(verbs), g.pick(adjs), g.pick(nouns), g.pick(days))
	case 3:
		return fmt.Sprintf("%s %s said the %s %s %s in %s is %s, ticket %d.", g.pick(firstNames), g.pick(lastNames), g.pick(adjs), g.pick(nouns), g.code(), g.pick(places), g.pick(adjs), 10000+g.r.IntN(90000))
	default:
		return fmt.Sprintf("Our %s %s depends on the %s %s of %s, so please %s it with %s %s.", g.pick(adjs), g.pick(nouns), g.code(), g.pick(nouns), g.code(), g.pick(verbs), g.pick(firstNames), g.pick(lastNames))
	}
}

func (g gen) prose(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.sentence())
	}
	return b.String()
}

type genExchange struct {
	ex       *inbound.Exchange
	own      []string // prose written for this exchange only
	user     string
	people   []person
	response string
	canary   string
}

// quote returns a window of text of at least n bytes on word boundaries.
func (g gen) quote(text string, n int) string {
	s := g.r.IntN(max(1, len(text)-n))
	for s > 0 && text[s-1] != ' ' {
		s--
	}
	e := min(len(text), s+n)
	for e < len(text) && text[e] != ' ' {
		e++
	}
	return text[s:e]
}

func (g gen) exchange(v *Verifier, id string) *genExchange {
	ge := &genExchange{}
	prose := func(n int) string {
		p := g.prose(n)
		ge.own = append(ge.own, p)
		return p
	}
	var user strings.Builder
	user.WriteString(prose(1 + g.r.IntN(2)))
	for i := 0; i < 1+g.r.IntN(2); i++ {
		p := g.person()
		ge.people = append(ge.people, p)
		fmt.Fprintf(&user, " The customer %s (%s, phone %s) paid with card %s. %s", p.name, p.email, p.phone, p.card, prose(1))
	}
	user.WriteString(" " + prose(1+g.r.IntN(3)))
	ge.user = user.String()
	sys := g.pick(systemPrompts)
	ge.canary = v.Mint(id)
	ge.ex = &inbound.Exchange{ID: id, Texts: []string{sys, ge.user}, Sent: []string{sys, ge.user, CanaryLine(ge.canary)}}
	ge.ex.Canary = CanaryLine(ge.canary)

	// The clean answer.
	var resp strings.Builder
	resp.WriteString(prose(1 + g.r.IntN(2)))
	p := ge.people[0]
	switch g.r.IntN(4) {
	case 0: // quote the user's own data, reformatted
		fmt.Fprintf(&resp, " I will contact %s at %s or %s about the card ending %s.", p.name, strings.ToUpper(p.email), strings.ReplaceAll(p.phone, " ", ""), strings.ReplaceAll(p.card, " ", "-"))
	case 1: // model-written example values
		fmt.Fprintf(&resp, " To try the %s flow, use %s@example.com, the test card 4242 4242 4242 4242 or http://example.org/%s.", g.code(), strings.ToLower(g.pick(firstNames)), strings.ToLower(g.code()))
	case 2: // quote the shared system prompt
		fmt.Fprintf(&resp, " As instructed: %q", sys[:min(len(sys), 90+g.r.IntN(40))])
	default: // quote a long part of the user's own message
		fmt.Fprintf(&resp, " You wrote: %q", ge.own[g.r.IntN(len(ge.own))])
	}
	resp.WriteString(" " + prose(1+g.r.IntN(3)))
	if g.r.IntN(2) == 0 {
		resp.WriteString(" " + g.pick(stock))
	}
	ge.response = resp.String()
	return ge
}

// TestQuality runs at least a thousand generated exchanges through one
// verifier and store: clean ones must raise nothing; contaminated ones, with
// a fragment of 64 bytes or more of an earlier exchange carrying a sensitive
// entity, a foreign canary, or a fragment of another exchange's text, must
// be caught.
func TestQuality(t *testing.T) {
	ctx := context.Background()
	// Stock phrases a model writes in every other answer are configured as
	// boilerplate: without them, the first few exchanges that repeat one
	// (before its document frequency shows it is common) would be flagged.
	v := newTestVerifier(t, Options{Boilerplate: append([]string{"@example.com, the test card 4242 4242 4242 4242 or http://example.org/"}, stock...)})
	g := gen{r: rand.New(rand.NewPCG(2026, 155))}
	const n = 1600
	var (
		done                                []*genExchange
		lastFrag                            string
		clean, cleanFlagged                 int
		kinds                               = []string{"entity", "canary", "text"}
		injected, caught                    = map[string]int{}, map[string]int{}
		fragmentBytes                       int
		quotedOwn, examples, sharedSys, own int
	)
	_ = quotedOwn
	for i := 0; i < n; i++ {
		ge := g.exchange(v, fmt.Sprintf("ex-%04d", i))
		response := ge.response
		kind := ""
		if i >= 20 && i%3 == 0 {
			kind = kinds[(i/3)%3]
			src := done[g.r.IntN(len(done))]
			var frag string
			switch kind {
			case "entity":
				// A window of 64+ bytes of the source's request around one
				// of its people.
				p := src.people[g.r.IntN(len(src.people))]
				at := strings.Index(src.user, p.email)
				lo := max(0, at-g.r.IntN(40))
				frag = src.user[lo:min(len(src.user), at+len(p.email)+g.r.IntN(40))]
				if len(frag) < 64 {
					frag = src.user[lo:min(len(src.user), lo+64)]
				}
			case "canary":
				frag = "Reference " + src.canary + "."
			case "text":
				// 64..160 bytes of prose the source's request or response
				// holds (and no other exchange wrote), cut anywhere.
				var long []string
				for _, p := range src.own {
					if len(p) >= 64 {
						long = append(long, p)
					}
				}
				text := long[g.r.IntN(len(long))]
				l := min(len(text), 64+g.r.IntN(97))
				s := g.r.IntN(len(text) - l + 1)
				frag = text[s : s+l]
			}
			fragmentBytes += len(frag)
			lastFrag = frag
			at := g.r.IntN(len(response))
			for at > 0 && response[at-1] != ' ' {
				at--
			}
			response = response[:at] + frag + " " + response[at:]
			injected[kind]++
		}
		// Half the exchanges are streamed in small random chunks.
		var vd *Verdict
		_ = lastFrag
		if i%2 == 0 {
			st, err := v.Stream(ctx, ge.ex)
			if err != nil {
				t.Fatal(err)
			}
			for p := response; len(p) > 0; {
				k := min(len(p), 1+g.r.IntN(12))
				if _, stop, err := st.Write(ctx, inbound.Delta{Text: p[:k], ID: "chatcmpl-" + ge.ex.ID}); err != nil {
					t.Fatal(err)
				} else if stop {
					break
				}
				p = p[k:]
			}
			_, vd, _ = st.Close(ctx, inbound.End{IDs: []string{"chatcmpl-" + ge.ex.ID}, HasUsage: true, PromptTokens: 200 + len(ge.user)/4, FinishReason: "stop"})
		} else {
			var err error
			vd, err = v.Check(ctx, ge.ex, response, inbound.End{HasUsage: true, PromptTokens: 200 + len(ge.user)/4, FinishReason: "stop"})
			if err != nil {
				t.Fatal(err)
			}
		}
		switch {
		case kind == "":
			clean++
			if vd.Contaminated() {
				cleanFlagged++
				t.Logf("false alarm on clean exchange %s: %+v", ge.ex.ID, vd.Signals)
			}
		case vd.Blocked:
			caught[kind]++
		default:
			t.Logf("missed %s contamination in %s (%d-byte fragment)", kind, ge.ex.ID, len(lastFrag))
		}
		done = append(done, ge)
	}
	_, _, _, _ = examples, sharedSys, own, fragmentBytes
	total, totalCaught := 0, 0
	for _, k := range kinds {
		total += injected[k]
		totalCaught += caught[k]
		t.Logf("injected %-6s fragments: %4d, caught %4d", k, injected[k], caught[k])
	}
	t.Logf("exchanges: %d (clean %d, contaminated %d); caught %d/%d; false alarms on clean: %d/%d; mean fragment %d bytes",
		n, clean, total, totalCaught, total, cleanFlagged, clean, fragmentBytes/max(1, total))
	// Entities and canaries are caught without exception. Text fragments
	// of this generator's templated prose whose only distinctive content
	// is a short code name can fall under MinSpan once the common template
	// words are discounted as boilerplate; and a few clean answers repeat
	// a 48+-byte templated sentence of another exchange by chance. These
	// bounds pin the measured quality so that a regression fails.
	if caught["entity"] != injected["entity"] || caught["canary"] != injected["canary"] {
		t.Errorf("entity or canary contamination missed")
	}
	if caught["text"]*100 < injected["text"]*90 {
		t.Errorf("text fragments caught %d/%d, want >= 90%%", caught["text"], injected["text"])
	}
	if cleanFlagged*200 > clean {
		t.Errorf("false alarms %d/%d, want <= 0.5%%", cleanFlagged, clean)
	}
}
