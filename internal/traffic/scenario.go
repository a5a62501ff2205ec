package traffic

import (
	"fmt"
	"strings"
	"sync"
)

// Tenant is one customer of the shared inference service.
type Tenant struct {
	// Name is the tenant as the server knows it (from its API key).
	Name string `json:"name"`
	// What the tenant does, for the report.
	About string `json:"about"`
	// APIKey is the tenant's fictional key for the local server.
	APIKey string `json:"-"`
	// System is the system prompt every request of the tenant carries.
	System string `json:"-"`
}

// Request is one chat request of the scenario.
type Request struct {
	// N numbers the request in sending order, from 1.
	N int `json:"n"`
	// Tenant is the sender's name.
	Tenant string `json:"tenant"`
	// Label says what the request is, without its content.
	Label string `json:"label"`
	// System and User are the two messages.
	System string `json:"-"`
	User   string `json:"-"`
	// MaxTokens is the answer budget.
	MaxTokens int `json:"max_tokens"`
	// Stream asks for an SSE stream.
	Stream bool `json:"stream"`
	// Oversize marks a prompt between the KV capacity and the context
	// length.
	Oversize bool `json:"oversize,omitempty"`
	// Abort marks a request its client gives up on during prefill (sent
	// with pagedcache.HeaderAbort), as a user closing the page would: set
	// by the demo when the server has the abort-reuse-race fault.
	Abort bool `json:"abort,omitempty"`
	// Sensitive is what the generator planted: detector IDs by count.
	Sensitive map[string]int `json:"sensitive,omitempty"`
}

// Scenario is a seeded, reproducible day of traffic on a shared inference
// service: tenants sending documents with personal data, secrets and
// confidentiality markers, clean questions, and a few prompts above the
// service's KV capacity. All values are fictional (generated, check-digit
// valid, outside documentation ranges). A Scenario is read-only once built
// and safe for concurrent use.
type Scenario struct {
	Seed     uint64
	Tenants  []Tenant
	Requests []Request
}

// ScenarioOptions sizes a scenario.
type ScenarioOptions struct {
	// Seed makes the scenario reproducible.
	Seed uint64
	// Rounds is how many times every tenant sends a request (default 4).
	Rounds int
	// OversizeTokens is the approximate token count of each over-capacity
	// prompt; 0 sends none.
	OversizeTokens int
}

// The tenants, in the order their requests go out within a round: the
// tenants with the most sensitive documents send last, so their pages are
// the most recently freed when an over-capacity prompt arrives (LIFO
// reuse), as in the incident.
var tenantSpecs = []struct {
	name, about, domain, system string
}{
	{"acme-support", "customer support for home thermostats", "acme-thermo.com",
		"You are the support assistant of a thermostat maker. Answer the customer's question from the manual excerpt, briefly and politely."},
	{"hooli-research", "market research on public reviews", "hooli-insights.com",
		"You are a research assistant. Summarise the material the analyst provides and list the recurring themes."},
	{"initech-dev", "platform engineering", "initech-systems.io",
		"You are a senior site reliability engineer. Explain why the deployment failed and propose a fix."},
	{"umbrella-legal", "corporate law firm", "umbrella-avocats.fr",
		"You are a legal drafting assistant. Review the memo and point out risks in plain language."},
	{"globex-bank", "retail bank, card disputes", "globex-banque.eu",
		"You are a back-office assistant of a retail bank. Draft a reply to the customer about their card dispute."},
	{"northwind-clinic", "private hospital, discharge letters", "northwind-clinique.fr",
		"You are a clinical documentation assistant. Summarise the discharge letter for the patient's general practitioner."},
}

// NewScenario builds the scenario for opts. The same options always give
// the same scenario.
func NewScenario(opts ScenarioOptions) *Scenario {
	if opts.Rounds <= 0 {
		opts.Rounds = 4
	}
	sc := &Scenario{Seed: opts.Seed}
	for i, t := range tenantSpecs {
		g := newGen(opts.Seed, uint64(1000+i))
		sc.Tenants = append(sc.Tenants, Tenant{Name: t.name, About: t.about,
			APIKey: "sk-demo-" + t.name + "-" + g.chars(base62, 20), System: t.system})
	}
	var filler string
	var fillerOnce sync.Once
	fill := func() string {
		fillerOnce.Do(func() { filler = fillerText(newGen(opts.Seed, 7), opts.OversizeTokens) })
		return filler
	}
	add := func(r Request) {
		r.N = len(sc.Requests) + 1
		sc.Requests = append(sc.Requests, r)
	}
	for round := range opts.Rounds {
		for i, t := range tenantSpecs {
			g := newGen(opts.Seed, uint64(round*100+i))
			label, user, planted := document(g, t.name, t.domain, round)
			add(Request{Tenant: t.name, Label: label, System: sc.Tenants[i].System, User: user,
				MaxTokens: 96, Stream: (round+i)%2 == 1, Sensitive: planted})
			// Over-capacity prompts, both free of sensitive data: a research
			// corpus at the end of the second round, and a forum export in
			// the last round, right after the bank's request.
			if opts.OversizeTokens <= 0 {
				continue
			}
			first := round == 1 && i == len(tenantSpecs)-1
			second := round == max(opts.Rounds-1, 2) && t.name == "globex-bank"
			if !first && !second {
				continue
			}
			tenant, label, head := "hooli-research", "public review corpus (over the KV capacity)",
				"Summarise the recurring themes of these public product reviews, collected over ten years.\n\n"
			maxTokens, stream := 384, false
			if !first {
				tenant, label, head = "acme-support", "public forum export (over the KV capacity)",
					"Here is the export of our public community forum. List the ten most frequent complaints.\n\n"
				maxTokens, stream = 256, true
			}
			sys := ""
			for _, tn := range sc.Tenants {
				if tn.Name == tenant {
					sys = tn.System
				}
			}
			add(Request{Tenant: tenant, Label: label, System: sys, User: head + fill(),
				MaxTokens: maxTokens, Stream: stream, Oversize: true})
		}
	}
	return sc
}

// Tenant returns the tenant called name.
func (sc *Scenario) Tenant(name string) (Tenant, bool) {
	for _, t := range sc.Tenants {
		if t.Name == name {
			return t, true
		}
	}
	return Tenant{}, false
}

// fillerWords are common English words, each a single token in the usual
// BPE vocabularies, none of them a detector's keyword; split on first use.
var fillerWords = sync.OnceValue(func() []string {
	return strings.Fields(`the a of and to in is it for on with as at by from this that was are be
have has had not but or an they we you he she his her their our its one all some more most other new old good
great small large long short first last next time day week year people way thing place work home house room
light heat cold warm water air noise sound screen button app phone wall floor door window battery power wire
setting mode schedule morning evening night summer winter price value quality design support update review
easy hard fast slow quiet loud clean simple useful happy sad nice bad better best worse worst again still
just also very really quite too much many few little well often never always sometimes after before during
while because when where which who what how why if then than so yet only even back down up out over under
into about around between through against without within along across behind beyond near far above below
use used using make made making keep kept find found give gave take took come came go went see saw know knew
think thought say said look looked want wanted need needed try tried call called seem seemed feel felt leave
left put set turn turned start started show showed hear heard play played run ran move moved live lived
believe hold bring happen write provide sit stand lose pay meet include continue learn change lead
understand watch follow stop create speak read allow add spend grow open walk win offer remember love
consider appear buy wait serve die send expect build stay fall cut reach kill remain suggest raise pass
sell require report decide pull`)
})

// fillerText writes about n tokens of clean review-like prose: one token
// per word and one per full stop.
func fillerText(g *gen, n int) string {
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(n * 5)
	tokens, sentence := 0, 0
	for tokens < n {
		w := g.pick(fillerWords())
		b.WriteString(w)
		tokens++
		sentence++
		if sentence >= 8 && g.r.IntN(6) == 0 {
			b.WriteString(". ")
			tokens++
			sentence = 0
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// document writes one tenant's request text for a round and returns its
// label and the detectors of the values planted in it.
func document(g *gen, tenant, domain string, round int) (label, text string, planted map[string]int) {
	planted = map[string]int{}
	plant := func(det, v string) string { planted[det]++; return v }
	switch tenant {
	case "acme-support":
		models := []string{"T200", "T250 Pro", "T300", "T450 Smart"}
		m := g.pick(models)
		label = "customer question about the " + m
		text = fmt.Sprintf(`My %s thermostat keeps switching to eco mode every evening even though I set comfort mode for the whole week. How do I make the schedule stick?

Manual excerpt, section 4.2 (Schedules): The %s follows the weekly schedule shown on its home screen. Each day has up to six periods; each period has a start time and a mode (comfort, eco or frost protection). Changes made with the dial last until the next period begins. To change the schedule itself, open Menu, then Schedule, choose the day, then the period, and confirm with a long press. A schedule copied from one day to the others keeps its periods and modes. If the thermostat returns to eco mode at the same hour every day, a period of the current day starts at that hour: edit or delete that period. Holiday mode overrides the schedule until its end date. After a power cut the thermostat keeps its schedule but asks for the time again.`, m, m)
	case "hooli-research":
		topics := []string{"noise of the outdoor unit", "battery life of the remote sensors", "setup of the mobile app", "accuracy of the room temperature reading"}
		tp := g.pick(topics)
		label = "review summary: " + tp
		var b strings.Builder
		fmt.Fprintf(&b, "Summarise what reviewers say about the %s. Reviews follow, one per line.\n\n", tp)
		for range 12 {
			b.WriteString(fillerText(g, 30))
			b.WriteString("\n")
		}
		text = b.String()
	case "initech-dev":
		svc := g.pick([]string{"billing-api", "ledger-sync", "invoice-worker", "payments-gateway"})
		label = "deployment log of " + svc
		host := fmt.Sprintf("db-prod-%d.%s", 1+g.r.IntN(9), domain)
		text = fmt.Sprintf(`The %s deployment failed again on the production cluster. Here is the log and the environment of the failing pod.

2026-03-%02dT07:%02d:11Z INFO  starting %s version 4.%d.%d
2026-03-%02dT07:%02d:12Z INFO  loading configuration from the environment
2026-03-%02dT07:%02d:12Z DEBUG DATABASE_URL=postgres://svc_%s:%s@%s:5432/%s
2026-03-%02dT07:%02d:12Z DEBUG AWS_ACCESS_KEY_ID=%s
2026-03-%02dT07:%02d:13Z DEBUG GITHUB_TOKEN=%s
2026-03-%02dT07:%02d:14Z ERROR migration 0042 failed: relation "invoices_archive" already exists
2026-03-%02dT07:%02d:14Z ERROR shutting down after 3 failed attempts

The same image works in staging. What changed, and how do we fix the migration?`,
			svc, 1+round, 10+round, svc, round, g.r.IntN(20),
			1+round, 10+round, 1+round, 10+round, strings.ReplaceAll(svc, "-", "_"), plant("secret.connection_string", g.password()), host, strings.ReplaceAll(svc, "-", "_"),
			1+round, 10+round, plant("secret.aws_access_key_id", g.awsKeyID()),
			1+round, 10+round, plant("secret.github_token", g.githubToken()),
			1+round, 10+round, 1+round, 10+round)
	case "umbrella-legal":
		target := g.pick([]string{"Vortex Robotics", "Helios Batteries", "Cobalt Freight", "Nimbus Analytics"})
		counsel := g.person()
		label = "memo on the " + target + " acquisition"
		text = fmt.Sprintf(`%s

MEMORANDUM — Project %s
To: the board of directors
Re: proposed acquisition of %s

Our client intends to acquire the whole share capital of %s for an enterprise value of %d million euros, to be announced after the quarterly results. The due diligence found two pending employment claims and a licence that terminates on a change of control. We recommend a specific indemnity for the claims and a condition precedent requiring the licensor's consent. Insider lists must be opened today for everyone who reads this memo.

Please review the draft and point out any risk we missed.

%s, partner
%s`,
			plant("marker.classification", "STRICTLY CONFIDENTIAL"), g.pick([]string{"Lighthouse", "Bluebird", "Granite", "Aurora"}), target, target, 120+g.r.IntN(800),
			plant("pii.person_name", counsel.Name()), plant("pii.email", g.email(counsel, domain)))
	case "globex-bank":
		c := g.person()
		agent := g.person()
		label = "card dispute reply"
		text = fmt.Sprintf(`Draft a reply to this customer. They dispute two payments they say they never made.

Customer: %s
Card: %s
Refund account (IBAN): %s
Contact: %s, %s

Message from the customer: "Two payments of 489.90 and 1,249.00 euros to an online electronics shop appeared on my statement on the 3rd and the 4th. I was abroad and had my card with me. Please cancel them and send me a new card."

Case handled by %s, disputes team, %s`,
			plant("pii.person_name", c.Name()), plant("pii.credit_card", g.card()), plant("pii.iban", g.ibanFR()),
			plant("pii.email", g.email(c, g.pick([]string{"laposte.net", "orange.fr", "free.fr", "gmail.com"}))), plant("pii.phone", g.phoneFR()),
			plant("pii.person_name", agent.Name()), plant("pii.email", g.email(agent, domain)))
	case "northwind-clinic":
		p := g.person()
		dr := g.person()
		label = "discharge letter"
		text = fmt.Sprintf(`Please summarise this discharge letter for the general practitioner in five lines.

Patient: %s, social security number (NIR) %s
Admitted for community-acquired pneumonia, treated with amoxicillin for seven days. Oxygen weaned on day three. Chest X-ray on discharge shows partial resolution. Follow-up X-ray in six weeks. Type 2 diabetes: metformin continued, HbA1c 7.9 percent. Allergy: penicillin rash in childhood, tolerated amoxicillin under supervision.
Patient contact: %s, %s

Dr %s, pulmonology
%s, %s`,
			plant("pii.person_name", p.Name()), plant("pii.fr_nir", g.nir()),
			plant("pii.phone", g.phoneFR()), plant("pii.email", g.email(p, g.pick([]string{"laposte.net", "orange.fr", "sfr.fr", "gmail.com"}))),
			plant("pii.person_name", dr.Name()), plant("pii.email", g.email(dr, domain)), plant("pii.phone", g.phoneFR()))
	}
	if len(planted) == 0 {
		planted = nil
	}
	return label, text, planted
}
