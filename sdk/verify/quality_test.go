package verify

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/inbound"
)

// The generator writes realistic exchanges. Each exchange's content is its
// own: documents and messages with people's names, contact data and card
// numbers, amounts, dates, ticket numbers and code names, in prose drawn
// from a wide vocabulary (a few hundred real words and a few thousand
// domain terms, Zipf-distributed) by a small stochastic grammar, so two
// exchanges share only short runs of words by chance (answers name their
// request's people, or people no request names). What responses share
// is realistic boilerplate: a handful of system prompts common to many
// exchanges, stock openings and closings (most of them among the built-in
// phrases, some unlisted ones made of common words), a deployment's own
// disclaimer (configured as Options.Boilerplate), and model-written example
// values.

var (
	firstNames = strings.Fields(`Jane John Amelie Karim Lucia Marco Sofia Liam Noah Emma Chloe Hugo Ines Yuki Omar Priya Lars Anna
Mateo Zoe Felix Nadia Victor Elena Samuel Aiko Bruno Camille Dario Esther Fatima Goran Hanna Ivan Jonas Kenji Leila Malik Nora
Oscar Paula Quentin Rosa Sven Tariq Ursula Vera Wim Xavier Yara Zeynep Adrien Beatriz Colm Dagny Emeka Frida Gaspard Hiroshi`)
	lastNames = strings.Fields(`Doe Martin Dubois Rossi Garcia Novak Schmidt Tanaka Haddad Patel Larsen Moreau Silva Kowalski
Jensen Fischer Romano Laurent Weber Costa Nguyen Okafor Berg Lindqvist Abara Brennan Castellanos Delacroix Eriksen Fontaine
Gallagher Horvath Ibrahim Jovanovic Kaplan Lefebvre Mancini Nakamura Oyelaran Petrov Quinlan Rahman Sorensen Tremblay Urquhart
Vasquez Wojcik Yilmaz Zimmermann Achterberg Bianchi Chevalier`)
	places = strings.Fields(`Lyon Madrid Oslo Porto Krakow Dublin Turin Ghent Basel Leeds Bergen Seville Utrecht Graz Tampere
Nantes Lille Bilbao Aarhus Brno Cork Genoa Malmo Riga Tallinn Vilnius Zagreb Split Bremen Leipzig Aachen Trieste Rennes Toulouse
Antwerp Gdansk Lisbon Valencia Bordeaux Stuttgart`)
	months = strings.Fields("January February March April May June July August September October November December")
	days   = strings.Fields("Monday Tuesday Wednesday Thursday Friday")
	tlds   = strings.Fields("com io fr de co.uk net eu es it")
	// Real words; the grammar also draws from generated domain terms.
	nounWords = strings.Fields(`invoice contract shipment ticket report budget forecast roadmap migration audit renewal refund
warranty onboarding backlog incident outage release campaign survey appraisal deadline quote proposal inventory payroll
subscription ledger pallet container warehouse supplier tender clause amendment appendix spreadsheet dashboard pipeline
cluster database firewall certificate license patent trademark prototype sample batch recall complaint claim premium
policy mortgage lease tenant landlord architect contractor scaffolding permit inspection blueprint turbine compressor valve
sensor firmware gateway router kiosk terminal vending franchise outlet boutique bakery vineyard harvest orchard greenhouse
tractor freight courier parcel customs tariff quota voucher coupon loyalty rebate commission bonus pension allowance
mileage expense receipt reimbursement headcount vacancy interview internship mentor workshop seminar webinar brochure
catalogue newsletter podcast mural gallery exhibit festival venue catering menu allergen recipe pantry fridge microwave
dishwasher boiler radiator thermostat insulation roof gutter chimney driveway fence gate hedge lawn mower`)
	verbWords = strings.Fields(`reviewed approved escalated postponed summarised reconciled validated drafted updated cancelled
scheduled confirmed prioritised archived negotiated translated forwarded audited revised signed filed priced split merged
shared tracked reworked finalised published rejected flagged shipped invoiced refunded repaired replaced inspected
calibrated migrated deployed rolled patched benchmarked audited relabelled repackaged rerouted subcontracted outsourced
insured underwrote appraised leased sublet renovated insulated repainted catered rebooked upgraded downgraded`)
	adjWords = strings.Fields(`quarterly urgent pending revised overdue annual regional critical preliminary confidential
delayed disputed monthly detailed final partial outdated refurbished bespoke seasonal wholesale retail municipal coastal
alpine rural suburban hydraulic thermal acoustic modular portable rugged waterproof organic vegan gluten-free heritage
vintage fragile bulky perishable hazardous certified provisional binding nonrefundable`)
	fillers   = strings.Fields(`the the the a our their this that each every`)
	preps     = strings.Fields(`for about with from into under over after before against during without between`)
	stockOpen = []string{
		"Sure! Here is", "Thank you for reaching out.", "Here is a concise summary of the points you raised.",
		"Based on the information you provided,", "Let me break this down step by step.", "Of course, here is",
		"Bien sûr, voici", "Merci pour votre message.", "Voici un résumé des points principaux :",
		// Unlisted openings made of common words.
		"Here is what we can do next.", "Thanks, that is clear.", "Good point, here is how I would handle it.",
	}
	stockClose = []string{
		"Let me know if you have any other questions.", "I hope this helps you move forward with the next steps.",
		"Please double-check the figures before sending anything to the client.", "Feel free to ask if you have any other questions.",
		"Is there anything else I can help you with?", "N'hésitez pas si vous avez d'autres questions.",
		"J'espère que cela vous sera utile.",
		// Unlisted closings made of common words.
		"Let me know what you think.", "I hope that is clear, and I am here if you need more help.",
	}
	// disclaimer is a deployment's own line, configured as boilerplate.
	disclaimer    = "This answer was prepared by the Northwind operations assistant; confirm every amount in the ERP ledger before filing it."
	systemPrompts = []string{
		"You are a helpful assistant for the customer operations team. Answer concisely, in a professional tone, and never invent figures that are not in the conversation. When unsure, ask a clarifying question.",
		"You are an internal writing aid. Rewrite or summarise what the user gives you, keeping every name, number and date exactly as written. Use short paragraphs and plain English.",
		"You are a finance support bot. Explain billing, invoices and refunds step by step; do not give legal advice; refer disputes to the billing desk at extension 4410.",
		"Tu es l'assistant du service juridique. Réponds en français, cite les clauses par leur numéro et signale toute incohérence entre les versions d'un contrat.",
		"You are the facilities helpdesk assistant for a property management company. Triage maintenance requests by urgency, name the contractor on the rota, and never promise dates the contractor has not confirmed.",
		"You are a procurement analyst. Compare supplier quotes line by line, convert every amount to EUR at the rate given by the user, and flag clauses that renew automatically.",
	}
)

type person struct{ name, email, phone, card string }

// People a clean answer may name besides those of its own request (the
// model's own examples, people it knows of): names from lists no request
// of the corpus draws from.
var (
	answerFirstNames = strings.Fields(`Thomas Pierre Nicolas Julien Laura Sarah Marie Louise Paul Daniel Michael Sophie
Clara Isabel Pedro Carmen Giulia Matteo Eva Karl Petra Olga Henri Agnes Claire Diego Greta Ingrid Joost Aurora`)
	answerLastNames = strings.Fields(`Bernard Durand Leroy Girard Bonnet Mercier Blanc Guerin Muller Wagner Becker Hoffmann
Ferrari Esposito Ricci Lopez Sanchez Romero Navarro Visser Bakker Smit Mulder Nowak Wisniewski Dvorak Horak Lindberg
Nyberg Virtanen`)
)

// termSyllables make the generated domain terms, and the names a model
// invents (see gen.inventedName).
var termSyllables = strings.Fields("ka lo mi ren tor vex sa qui dra nel po zu fen gar ix ul bra cen dor el fa gri hol ja kem lum mor nid ost pra rul sil tam ush vol wen yar zel")

// inventedName is a name a model makes up for one answer (what an example
// is for, an example person's surname), for the purpose what: four
// syllables of 38 drawn from a hash of the exchange ID (not from the
// generator's random source), capitalised, so that two answers rarely make
// up the same (one pair in two million).
func inventedName(id, what string) string {
	h := fnv.New64a()
	h.Write([]byte(what + "\x00" + id))
	x := h.Sum64()
	var b strings.Builder
	for range 4 {
		b.WriteString(termSyllables[x%uint64(len(termSyllables))])
		x /= uint64(len(termSyllables))
	}
	return strings.ToUpper(b.String()[:1]) + b.String()[1:]
}

// gen generates exchanges; its vocabulary of domain terms is generated once
// from its seed.
type gen struct {
	r     *rand.Rand
	terms []string
	zipf  *rand.Zipf
	// names, when set, are the people of an answer's request: an
	// answer's sentences name them or people from the answer lists.
	// Else sentences name any first name and surname of the lists.
	names []string
}

func newGen(seed1, seed2 uint64) *gen {
	r := rand.New(rand.NewPCG(seed1, seed2))
	syl := termSyllables
	sfx := strings.Fields("ate ion ity or ing ment al ics ure ase ine ode ex")
	seen := map[string]bool{}
	g := &gen{r: r}
	for _, w := range append(append(append([]string(nil), nounWords...), verbWords...), adjWords...) {
		seen[w] = true
		g.terms = append(g.terms, w)
	}
	for len(g.terms) < 4000 {
		var b strings.Builder
		for i := 0; i < 2+r.IntN(2); i++ {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		b.WriteString(sfx[r.IntN(len(sfx))])
		if w := b.String(); !seen[w] {
			seen[w] = true
			g.terms = append(g.terms, w)
		}
	}
	r.Shuffle(len(g.terms), func(i, j int) { g.terms[i], g.terms[j] = g.terms[j], g.terms[i] })
	g.zipf = rand.NewZipf(r, 1.1, 2, uint64(len(g.terms)-1))
	return g
}

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }
func (g *gen) term() string            { return g.terms[g.zipf.Uint64()] }

func (g *gen) luhnCard() string {
	d := make([]int, 16)
	d[0] = 4 + g.r.IntN(2)
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

func (g *gen) company() string {
	return strings.ToLower(g.code()) + "-" + g.pick(strings.Fields("supply logistics foods energy labs partners group retail"))
}

// lastName is a real surname or a generated one: customers of different
// organisations rarely share a full name.
func (g *gen) lastName() string {
	if g.r.IntN(3) == 0 {
		return g.pick(lastNames)
	}
	c := g.code()
	return c + g.pick(strings.Fields("son sen ez ini ova ard ier mann ski"))
}

func (g *gen) person() person {
	f, l := g.pick(firstNames), g.lastName()
	return person{
		name:  f + " " + l,
		email: fmt.Sprintf("%s.%s%d@%s.%s", strings.ToLower(f), strings.ToLower(l), g.r.IntN(100), g.company(), g.pick(tlds)),
		phone: fmt.Sprintf("+33 6 %02d %02d %02d %02d", g.r.IntN(100), g.r.IntN(100), g.r.IntN(100), g.r.IntN(100)),
		card:  g.luhnCard(),
	}
}

// code is a project or product code name, like the ones real tickets carry.
func (g *gen) code() string {
	syl := []string{"ka", "lo", "mi", "ren", "tor", "vex", "sa", "qui", "dra", "nel", "po", "zu", "fen", "gar", "ix", "ul", "bri", "cal", "dun", "esk"}
	var b strings.Builder
	for i := 0; i < 2+g.r.IntN(2); i++ {
		b.WriteString(syl[g.r.IntN(len(syl))])
	}
	return strings.ToUpper(b.String()[:1]) + b.String()[1:]
}

func (g *gen) nounPhrase() string {
	var b strings.Builder
	b.WriteString(g.pick(fillers))
	if g.r.IntN(2) == 0 {
		b.WriteString(" " + g.pick(adjWords))
	}
	b.WriteString(" " + g.term())
	if g.r.IntN(3) == 0 {
		b.WriteString(" " + g.term())
	}
	return b.String()
}

func (g *gen) subject() string {
	switch g.r.IntN(5) {
	case 0:
		// Two draws either way, so that the rest of the corpus does not
		// depend on whose names an answer may use.
		f, l := g.r.IntN(len(firstNames)), g.r.IntN(len(lastNames))
		switch {
		case g.names == nil:
			return firstNames[f] + " " + lastNames[l]
		case f%3 == 0:
			return g.names[l%len(g.names)]
		}
		return answerFirstNames[f%len(answerFirstNames)] + " " + answerLastNames[l%len(answerLastNames)]
	case 1:
		return g.pick(strings.Fields("We They She He Finance Legal Procurement"))
	case 2:
		return "The " + g.code() + " team"
	default:
		np := g.nounPhrase()
		return strings.ToUpper(np[:1]) + np[1:]
	}
}

func (g *gen) modifier() string {
	switch g.r.IntN(7) {
	case 0:
		return fmt.Sprintf("on %s %d %s", g.pick(days), 1+g.r.IntN(28), g.pick(months))
	case 1:
		return fmt.Sprintf("for %d,%03d.%02d EUR", 1+g.r.IntN(90), g.r.IntN(1000), g.r.IntN(100))
	case 2:
		return "in " + g.pick(places)
	case 3:
		return fmt.Sprintf("under ticket %s-%d", strings.ToUpper(g.code()[:3]), 100+g.r.IntN(99900))
	case 4:
		return fmt.Sprintf("at %d%%", 1+g.r.IntN(99))
	default:
		return g.pick(preps) + " " + g.nounPhrase()
	}
}

// sentence is one sentence of free text: subject, verb, object, a few
// modifiers, sometimes a second clause.
func (g *gen) sentence() string {
	var b strings.Builder
	b.WriteString(g.subject() + " " + g.pick(verbWords) + " " + g.nounPhrase())
	for i := g.r.IntN(3); i > 0; i-- {
		b.WriteString(" " + g.modifier())
	}
	if g.r.IntN(3) == 0 {
		b.WriteString(", " + g.pick(strings.Fields("and but so while because although")) + " " + strings.ToLower(g.subject()[:1]) + g.subject()[1:] + " " + g.pick(verbWords) + " " + g.nounPhrase())
	}
	b.WriteString(".")
	return b.String()
}

// sentences returns n bytes of the generator's sentences.
func (g *gen) sentences(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(g.sentence() + " ")
	}
	return b.String()[:n]
}

func (g *gen) prose(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.sentence())
	}
	return b.String()
}

// shortFragments returns two to four fragments of texts, joined with NUL
// bytes: one of 46 to 60 bytes of distinctive wording (see
// docFreq.distinctive) and the others of three to seven words (16 to 60
// bytes), or "" when 50 draws find none.
// informativeBytes is the length of the informative words of f.
func informativeBytes(f string) int {
	n := 0
	for _, w := range commonFree.informativeWords([]byte(f), 0, len(f), nil, nil) {
		n += w.end - w.start
	}
	return n
}

// commonFree is a Verifier for its common-word list.
var commonFree = &Verifier{common: commonSet()}

func (g *gen) shortFragments(texts []string, df *docFreq) string {
	for try := 0; try < 50; try++ {
		var frags []string
		long := false
		for range 2 + g.r.IntN(3) {
			words := strings.Fields(texts[g.r.IntN(len(texts))])
			l := min(len(words), 3+g.r.IntN(5))
			if !long {
				l = min(len(words), 6+g.r.IntN(5))
			}
			at := g.r.IntN(len(words) - l + 1)
			f := strings.Join(words[at:at+l], " ")
			if len(f) < 16 || len(f) > 60 {
				continue
			}
			if !long && len(f) >= 46 && df.distinctive(f) == len(f) && informativeBytes(f) >= DefaultMinWordBytes {
				long = true
			}
			frags = append(frags, f)
		}
		if len(frags) >= 2 && long {
			return strings.Join(frags, "\x00")
		}
	}
	return ""
}

type genExchange struct {
	ex       *inbound.Exchange
	own      []string // prose written for this exchange only
	user     string
	people   []person
	response string
	canary   string
}

func (g *gen) exchange(v *Verifier, id string) *genExchange {
	ge := &genExchange{}
	prose := func(n int) string {
		p := g.prose(n)
		ge.own = append(ge.own, p)
		return p
	}
	var user strings.Builder
	user.WriteString(prose(1 + g.r.IntN(2)))
	if g.r.IntN(2) == 0 {
		// A pasted document.
		fmt.Fprintf(&user, "\n\n--- %s notes, %d %s ---\n%s\n---\n", g.code(), 1+g.r.IntN(28), g.pick(months), prose(2+g.r.IntN(4)))
	}
	for i := 0; i < 1+g.r.IntN(2); i++ {
		p := g.person()
		ge.people = append(ge.people, p)
		switch g.r.IntN(3) {
		case 0:
			fmt.Fprintf(&user, " The customer %s (%s, phone %s) paid with card %s. %s", p.name, p.email, p.phone, p.card, prose(1))
		case 1:
			fmt.Fprintf(&user, " %s\n%s | %s | %s | card %s\n", prose(1), p.name, p.email, p.phone, p.card)
		default:
			fmt.Fprintf(&user, " %s wrote from %s on %d %s, callback %s, and asked us to refund card %s. %s", p.name, p.email, 1+g.r.IntN(28), g.pick(months), p.phone, p.card, prose(1))
		}
	}
	user.WriteString(" " + prose(1+g.r.IntN(3)))
	ge.user = user.String()
	sys := g.pick(systemPrompts)
	ge.canary = v.Mint(id)
	ge.ex = &inbound.Exchange{ID: id, Texts: []string{sys, ge.user}, Sent: []string{sys, ge.user, CanaryLine(ge.canary)}}
	ge.ex.Canary = CanaryLine(ge.canary)

	// The clean answer. Its sentences name the request's people or people
	// no request names, never a person only another exchange's request
	// named: a full name drawn from the request lists above is in other
	// exchanges' requests by chance (62 first names by 52 surnames), and
	// a name another exchange's request carried is what
	// inbound.foreign_entity reports for pii.person_name.
	g.names = nil
	for _, p := range ge.people {
		g.names = append(g.names, p.name)
	}
	defer func() { g.names = nil }()
	var resp strings.Builder
	if g.r.IntN(10) < 7 {
		resp.WriteString(g.pick(stockOpen) + " ")
	}
	resp.WriteString(prose(1 + g.r.IntN(2)))
	p := ge.people[0]
	switch g.r.IntN(4) {
	case 0: // quote the user's own data, reformatted
		fmt.Fprintf(&resp, " I will contact %s at %s or %s about the card ending %s.", p.name, strings.ToUpper(p.email), strings.ReplaceAll(p.phone, " ", ""), strings.ReplaceAll(p.card, " ", "-"))
	case 1: // model-written example values, in the model's own words
		// What the example is for, and the example person's surname, are
		// names the model makes up for this answer (see inventedName): as
		// many as the answers. They used to be drawn from short lists (a
		// code of 400 two-syllable ones and a term of the Zipf head for
		// what the example is for, one of 62 first names for its address,
		// another code for the URL's path), and two unrelated answers
		// then shared runs across the stock wording by chance ("…the
		// Dunixdun porengarity, send it to https://api.example.com/v1/drasa
		// with the id", ", use lars@example.com and the sandbox card 4242
		// 4242 4242 4242. Our perishable"): false alarms in 3 corpora of 25
		// (seeds 2, 10 and 19), one of which cut a stream before its real
		// fragment was seen. Two real answers name the same product and
		// the same example person around the same stock sentence when
		// they answer the same question, not by chance. The draws of the
		// short lists are still made, so that the rest of every corpus
		// stays as it was.
		lead := g.pick([]string{"To try the", "If you want to test the", "For a dry run of the", "When you rehearse the", "Before going live with the"})
		_, _ = g.code(), g.term()
		what, surname := inventedName(id, "product"), inventedName(id, "surname")
		switch g.r.IntN(3) {
		case 0:
			first := strings.ToLower(g.pick(firstNames))
			fmt.Fprintf(&resp, " %s %s, use %s.%s@example.com and %s 4242 4242 4242 4242.", lead, what, first, strings.ToLower(surname), g.pick([]string{"the test card", "the sandbox card", "a dummy card such as", "the card"}))
		case 1:
			term, first := g.term(), g.pick(firstNames)
			_, _ = g.pick(firstNames), g.lastName()
			fmt.Fprintf(&resp, " %s %s, a %s record could read: %s %s, %s.%s@example.org, 4111 1111 1111 1111.", lead, what, term, first, surname, strings.ToLower(first), strings.ToLower(surname))
		default:
			_ = g.code()
			fmt.Fprintf(&resp, " %s %s, send it to https://api.example.com/v1/%s with %s %d.", lead, what, strings.ToLower(what), g.pick([]string{"the header X-Request-Id:", "a request number like", "the id"}), g.r.IntN(100000))
		}
	case 2: // quote the shared system prompt
		fmt.Fprintf(&resp, " As instructed: %q", sys[:min(len(sys), 90+g.r.IntN(60))])
	default: // quote a long part of the user's own message
		fmt.Fprintf(&resp, " You wrote: %q", ge.own[g.r.IntN(len(ge.own))])
	}
	resp.WriteString(" " + prose(1+g.r.IntN(3)))
	if g.r.IntN(4) == 0 {
		resp.WriteString(" " + disclaimer)
	}
	if g.r.IntN(10) < 6 {
		resp.WriteString(" " + g.pick(stockClose))
	}
	ge.response = resp.String()
	return ge
}

// TestQuality runs 1,600 generated exchanges through one verifier and one
// store, half of them streamed in pieces of 1 to 12 bytes. Every third
// exchange after the first 20 carries a fragment of 64 bytes or more of an
// earlier exchange: a window of its request around a person's e-mail (a
// sensitive entity), a window of its canary line holding its canary, or a
// window of its own prose (request or recorded response) carrying 64
// distinctive bytes (see docFreq.distinctive), cut anywhere. The issue's
// goal is enforced exactly: every fragment is caught by the signal of its
// kind, naming the source exchange where the signal names one, and no
// clean exchange raises any signal (clean answers quote the user's own
// data, write example values, quote the shared system prompts and use stock
// phrases). AISHIELD_QUALITY_SEED=n measures another corpus.
//
// Besides, for every 20 exchanges answered one more is aborted before its
// answer (finish reason "abort"), drawn from a generator of its own so
// that the corpus above stays the same, and every tenth exchange (not a
// third one) carries two to four short fragments of an aborted exchange's
// request, as a late write in a paged KV cache gives them (pagedcache's
// abort-reuse-race): one of 46 to 60 bytes of rare wording, the others of
// three to seven words. At least 95% must be caught (a few are mostly
// amounts, under the informative words every run needs), and clean
// answers must stay clean with those sources under the lower bar.
//
// It runs twice: with principals unknown (the corpus above), and with the
// exchanges of 40 principals (exchange i is principal i mod 40's), every
// fragment drawn from another principal's exchange: the same goals hold.
func TestQuality(t *testing.T) {
	for _, principals := range []int{0, 40} {
		t.Run(fmt.Sprintf("principals=%d", principals), func(t *testing.T) { quality(t, principals) })
	}
}

func quality(t *testing.T, principals int) {
	ctx := context.Background()
	principal := func(i int) string {
		if principals == 0 {
			return ""
		}
		return fmt.Sprint("tenant-", i%principals)
	}
	const abortEvery = 20
	v := newTestVerifier(t, Options{Boilerplate: []string{disclaimer}})
	g := newGen(2026+qualitySeed(), 155)
	// Piece sizes come from their own source, so that where a stream is
	// cut does not change the exchanges generated after it.
	pieces := rand.New(rand.NewPCG(155, 2026))
	df := newDocFreq(v.opts.Fingerprint)
	widened, widenedBytes, redrawn := 0, 0, 0
	const n = 1600
	type source struct {
		ge   *genExchange
		text []string // its prose the store has seen
	}
	// Aborted exchanges, and fragments of them in answers, come from a
	// generator of their own, so that the corpus above stays the same.
	ga := newGen(4052+qualitySeed(), 156)
	var (
		done                []source
		aborted             []source // exchanges that ended with finish reason "abort"
		clean, cleanFlagged int
		kinds               = []string{"entity", "canary", "text", "short"}
		injected, caught    = map[string]int{}, map[string]int{}
		fragMin, fragMax    = 1 << 30, 0
		fragSum             int
		textByEntity        int // text fragments cut by a value they carry before their run completed
		holdSum, holdN      int // bytes held back after each piece of the clean streams
		holdMax             int
		leaked, leakedMax   int // streamed fragments with bytes released before the cut, and the most
	)
	want := map[string]string{"entity": policies.SignalForeignEntity, "canary": policies.SignalCanary, "text": policies.SignalCrossExchange,
		"short": policies.SignalCrossExchange}
	for i := 0; i < n; i++ {
		if i%abortEvery == abortEvery-1 {
			// An exchange aborted before any answer (as in a client
			// disconnect during prefill): its request may come back in
			// short fragments.
			ab := ga.exchange(v, fmt.Sprintf("ab-%04d", i))
			ab.ex.Principal = principal(i)
			st, err := v.Begin(ctx, ab.ex)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Close(ctx, inbound.End{FinishReason: "abort"}); err != nil {
				t.Fatal(err)
			}
			var sent []string // its prose that was sent (the rest was for its answer)
			for _, p := range ab.own {
				if strings.Contains(ab.user, p) {
					sent = append(sent, p)
				}
			}
			aborted = append(aborted, source{ge: ab, text: sent})
			df.add(ab.ex.Sent)
		}
		ge := g.exchange(v, fmt.Sprintf("ex-%04d", i))
		ge.ex.Principal = principal(i)
		// other draws a source among from of another principal than ge's
		// (with principals unknown, the first draw: the corpus stays the
		// same).
		other := func(r *rand.Rand, from []source) source {
			for {
				if src := from[r.IntN(len(from))]; principals == 0 || src.ge.ex.Principal != ge.ex.Principal {
					return src
				}
			}
		}
		response := ge.response
		kind := ""
		var src source
		var frag string
		fragAt := -1 // where frag starts in the response (one fragment)
		if i >= 20 && i%10 == 5 && i%3 != 0 {
			// Two to four fragments of an aborted exchange's prose, as a
			// late write in the cache pages gives them, one of them 46
			// bytes or more.
			kind = "short"
			src = other(ga.r, aborted)
			frag = ga.shortFragments(src.text, df)
		} else if i >= 20 && i%3 == 0 {
			kind = kinds[(i/3)%3]
			src = other(g.r, done)
			switch kind {
			case "entity":
				// A window of 64 to 128 bytes of the source's request
				// around one of its people's e-mail.
				p := src.ge.people[g.r.IntN(len(src.ge.people))]
				at := strings.Index(src.ge.user, p.email)
				l := 64 + g.r.IntN(65)
				lo := max(0, min(at-g.r.IntN(40), at+len(p.email)-l))
				frag = src.ge.user[lo:min(len(src.ge.user), lo+max(l, at+len(p.email)-lo))]
			case "canary":
				line := CanaryLine(src.ge.canary)
				at := strings.Index(line, src.ge.canary)
				l := 64 + g.r.IntN(len(line)-64+1)
				lo := max(0, min(at, len(line)-l))
				lo = g.r.IntN(lo + 1)
				frag = line[lo : lo+l]
			case "text":
				// The fragment must carry 64 bytes of the source's own
				// text: bytes in no k-gram that more than
				// DefaultMaxDocFreq other exchanges hold. The rule
				// is that material seen in many exchanges does not count,
				// and the generator's wording is shared ("...toryarholics
				// under ticket QUI-" is in over a hundred exchanges), so a
				// window is widened, word by word, until it carries 64
				// distinctive bytes; a text that cannot is passed over
				// for another (up to 50 draws, counted).
				for try := 0; try < 50 && frag == ""; try++ {
					if try > 0 {
						src = other(g.r, done)
						redrawn++
					}
					var long []string
					for _, p := range src.text {
						if len(p) >= 64 {
							long = append(long, p)
						}
					}
					if len(long) == 0 {
						continue
					}
					text := long[g.r.IntN(len(long))]
					l := min(len(text), 64+g.r.IntN(97))
					s := g.r.IntN(len(text) - l + 1)
					e := s + l
					for df.distinctive(text[s:e]) < 64 && (s > 0 || e < len(text)) {
						if e < len(text) {
							if j := strings.IndexByte(text[e+1:], ' '); j >= 0 {
								e += 1 + j
							} else {
								e = len(text)
							}
						} else {
							s = strings.LastIndexByte(text[:s-1], ' ') + 1
						}
					}
					if df.distinctive(text[s:e]) < 64 {
						continue
					}
					if e-s > l {
						widened++
						widenedBytes += e - s - l
					}
					frag = text[s:e]
				}
			}
			if frag == "" {
				kind = ""
			} else {
				if len(frag) < 64 {
					t.Fatalf("generator: %s fragment of %d bytes", kind, len(frag))
				}
				fragMin, fragMax, fragSum = min(fragMin, len(frag)), max(fragMax, len(frag)), fragSum+len(frag)
				at := g.r.IntN(len(response))
				for at > 0 && response[at-1] != ' ' {
					at--
				}
				response = response[:at] + frag + " " + response[at:]
				fragAt = at
				injected[kind]++
			}
		}
		if kind == "short" {
			if frag == "" {
				kind = ""
			} else {
				// At word starts of the answer as written, inserted from
				// the last, so that no fragment splits another.
				frags := strings.Split(frag, "\x00")
				ats := make([]int, len(frags))
				for k := range ats {
					at := ga.r.IntN(len(response))
					for at > 0 && response[at-1] != ' ' {
						at--
					}
					ats[k] = at
				}
				slices.Sort(ats)
				for k := len(frags) - 1; k >= 0; k-- {
					response = response[:ats[k]] + frags[k] + " " + response[ats[k]:]
				}
				injected[kind]++
			}
		}
		// Half the exchanges are streamed in small random pieces.
		var vd *Verdict
		complete := true
		end := inbound.End{IDs: []string{"chatcmpl-" + ge.ex.ID}, HasUsage: true, PromptTokens: 200 + len(ge.user)/4, FinishReason: "stop"}
		if i%2 == 0 {
			st, err := v.Stream(ctx, ge.ex)
			if err != nil {
				t.Fatal(err)
			}
			released := 0
			for p := response; len(p) > 0; {
				k := min(len(p), 1+pieces.IntN(12))
				rel, stop, err := st.Write(ctx, inbound.Delta{Text: p[:k], ID: "chatcmpl-" + ge.ex.ID})
				if err != nil {
					t.Fatal(err)
				}
				released += len(rel)
				if stop {
					complete = false
					break
				}
				p = p[k:]
				if kind == "" {
					held := len(response) - len(p) - released
					holdSum, holdN, holdMax = holdSum+held, holdN+1, max(holdMax, held)
				}
			}
			if fragAt >= 0 && released > fragAt {
				// Text of another exchange released before the stream
				// was cut: its neutral start (common wording, the canary
				// line's own words, numbers), before the first
				// fingerprint that counts (the fixed window of 256 bytes
				// released as many, 60 fragments, 28 bytes at most).
				leaked++
				leakedMax = max(leakedMax, min(released, fragAt+len(frag))-fragAt)
			}
			for _, sg := range st.Verdict().Signals {
				if sg.Action == policies.SignalBlock && sg.End > sg.Start && released > sg.Start {
					t.Errorf("%s: %d bytes released, into the span %d-%d of %s", ge.ex.ID, released, sg.Start, sg.End, sg.ID)
				}
			}
			if _, vd, err = st.Close(ctx, end); err != nil {
				t.Fatal(err)
			}
		} else {
			var err error
			if vd, err = v.Check(ctx, ge.ex, response, end); err != nil {
				t.Fatal(err)
			}
		}
		if kind == "" {
			clean++
			if vd.Contaminated() {
				cleanFlagged++
				t.Errorf("false alarm on clean exchange %s: %+v", ge.ex.ID, vd.Signals)
				if debugQuality {
					for _, s := range vd.Signals {
						t.Logf("shared %q", response[s.Start:min(s.End, len(response))])
						own := map[uint64]bool{}
						for _, x := range ge.ex.Sent {
							fingerprint.KGrams([]byte(x), v.opts.Fingerprint, func(h uint64) { own[h] = true })
						}
						for _, f := range fingerprint.OfString(response, v.opts.Fingerprint) {
							if f.End < s.Start || f.Offset > s.End {
								continue
							}
							hs, _ := v.store.Lookup(ctx, []uint64{f.Hash})
							t.Logf("  fp %3d-%3d %q count=%d own=%v holders=%v", f.Offset, f.End, response[f.Offset:f.End], hs[0].Count, own[f.Hash], hs[0].Exchanges)
						}
					}
				}
			}
		} else {
			ok, byEntity := false, false
			for _, s := range vd.Signals {
				// An entity fragment may be cut by its text before its
				// entity streams in: a cross-exchange signal naming the
				// source catches it too. A text fragment may be cut by a
				// value of its source's request that it carries (a
				// person's name) before its run of fingerprints is long
				// enough: a foreign-entity signal naming the source
				// catches it too.
				named := slices.Contains(s.Sources, src.ge.ex.ID)
				if s.Action == "block" && (s.ID == want[kind] && (kind == "entity" || named) || kind == "entity" && s.ID == policies.SignalCrossExchange && named) {
					ok = true
				}
				if s.Action == "block" && kind == "text" && s.ID == policies.SignalForeignEntity && named {
					byEntity = true
				}
			}
			if !ok && byEntity {
				ok = true
				textByEntity++
			}
			if ok {
				caught[kind]++
			} else {
				t.Logf("missed %s fragment of %s in %s (%d bytes): %+v", kind, src.ge.ex.ID, ge.ex.ID, len(frag), vd.Signals)
				if debugQuality {
					t.Logf("fragment %q", frag)
					t.Logf("response %q", response)
					own := map[uint64]bool{}
					for _, x := range ge.ex.Sent {
						fingerprint.KGrams([]byte(x), v.opts.Fingerprint, func(h uint64) { own[h] = true })
					}
					fat := strings.Index(response, frag)
					for _, f := range fingerprint.OfString(response, v.opts.Fingerprint) {
						if f.End < fat-10 || f.Offset > fat+len(frag)+10 {
							continue
						}
						hs, _ := v.store.Lookup(ctx, []uint64{f.Hash})
						t.Logf("  fp %3d-%3d %q count=%d own=%v holders=%v words=%v", f.Offset, f.End, response[f.Offset:f.End], hs[0].Count, own[f.Hash], hs[0].Exchanges, v.informativeWords([]byte(response), f.Offset, f.End, nil, nil))
					}
				}
			}
		}
		// The store has seen the request's prose, and the response's as
		// written when it was a source: verified to the end without any
		// signal (a contaminated answer is nobody's source).
		recorded := complete && !vd.Contaminated()
		seen := source{ge: ge}
		for _, p := range ge.own {
			if strings.Contains(ge.user, p) || recorded && strings.Contains(response, p) {
				seen.text = append(seen.text, p)
			}
		}
		done = append(done, seen)
		// What the store saw of this exchange: its request, and its
		// response when it was recorded.
		df.add(append(append([]string(nil), ge.ex.Sent...), func() string {
			if recorded {
				return response
			}
			return ""
		}()))
	}
	total, totalCaught := 0, 0
	for _, k := range kinds {
		total += injected[k]
		totalCaught += caught[k]
		t.Logf("injected %-6s fragments: %4d, caught %4d", k, injected[k], caught[k])
	}
	t.Logf("exchanges: %d (clean %d, contaminated %d); caught %d/%d; false alarms on clean: %d/%d; fragments %d..%d bytes, mean %d",
		n, clean, total, totalCaught, total, cleanFlagged, clean, fragMin, fragMax, fragSum/max(1, total))
	if total < 500 || clean < 900 || injected["short"] < 100 {
		t.Fatalf("too few exchanges measured: %d contaminated, %d clean", total, clean)
	}
	t.Logf("clean streams: %.1f bytes held back after a piece on average, %d at most; streamed fragments of which bytes were released before the cut: %d (%d bytes at most)",
		float64(holdSum)/float64(max(1, holdN)), holdMax, leaked, leakedMax)
	t.Logf("text fragments caught by a foreign entity of their source (a name it sent) before their run of fingerprints: %d", textByEntity)
	t.Logf("text fragments widened to carry 64 distinctive bytes: %d (by %d bytes on average); source texts passed over (under 64 distinctive bytes in all): %d",
		widened, widenedBytes/max(1, widened), redrawn)
	// The goals, exactly: every fragment caught by its signal
	// naming its source, no false alarm.
	for _, k := range kinds[:3] {
		if caught[k] != injected[k] {
			t.Errorf("%s fragments caught %d/%d, want all", k, caught[k], injected[k])
		}
	}
	// Short fragments of an aborted exchange: one of 46 bytes or more of
	// its rare wording in each answer, but some are mostly amounts and
	// codes, under the informative words every run needs.
	if 100*caught["short"] < 95*injected["short"] {
		t.Errorf("short fragments of aborted exchanges caught %d/%d, want 95%% or more", caught["short"], injected["short"])
	}
	if cleanFlagged > 0 {
		t.Errorf("%d false alarms on clean exchanges, want 0", cleanFlagged)
	}
}

// docFreq counts, for every k-gram (all of them, not only winnowed
// fingerprints), how many exchanges the store saw it in: the test's own
// measure of what is shared wording, independent of the verifier.
type docFreq struct {
	opts fingerprint.Options
	n    map[uint64]int32
}

func newDocFreq(opts fingerprint.Options) *docFreq {
	opts.Window = 1
	return &docFreq{opts: opts, n: map[uint64]int32{}}
}

// add counts the k-grams of one exchange's texts.
func (d *docFreq) add(texts []string) {
	seen := map[uint64]bool{}
	for _, t := range texts {
		for _, f := range fingerprint.OfString(t, d.opts) {
			if !seen[f.Hash] {
				seen[f.Hash] = true
				d.n[f.Hash]++
			}
		}
	}
}

// distinctive returns the number of bytes of frag, a text of one exchange,
// that lie in no k-gram held by more than DefaultMaxDocFreq other
// exchanges: bytes of shared wording do not count, even when k-grams that
// straddle them into rarer words are rare.
func (d *docFreq) distinctive(frag string) int {
	common, end := 0, 0
	for _, f := range fingerprint.OfString(frag, d.opts) {
		if d.n[f.Hash] <= DefaultMaxDocFreq+1 {
			continue
		}
		if f.Offset >= end {
			common += f.End - f.Offset
		} else if f.End > end {
			common += f.End - end
		}
		end = max(end, f.End)
	}
	return len(frag) - common
}

// debugQuality logs the text of misses and false alarms.
const debugQuality = false

// qualitySeed offsets the generator's seed by AISHIELD_QUALITY_SEED (0 when
// unset), to measure other corpora than the pinned one.
func qualitySeed() uint64 {
	var n uint64
	_, _ = fmt.Sscan(os.Getenv("AISHIELD_QUALITY_SEED"), &n)
	return n
}
