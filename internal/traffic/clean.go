package traffic

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Clean traffic is what real users send that is not contamination, and
// that a verifier comparing answers with other exchanges must not refuse:
// retries of a request that timed out, regenerations, one instruction
// template run over many inputs, the same FAQ asked by many accounts, a
// long system prompt shared by an application's users, retrieval-augmented
// requests quoting the same documents, conversations resending their
// history, and a response cache answering identical requests alike.

// The kinds of clean exchanges.
const (
	KindRetry        = "retry"          // the same request sent again by the same caller
	KindRegenerate   = "regenerate"     // the same prompt with another seed
	KindTemplate     = "template"       // one instruction over many inputs
	KindFAQ          = "faq"            // the same question from many callers
	KindParaphrase   = "faq-paraphrase" // the same question worded otherwise
	KindSystemPrompt = "system-prompt"  // a long system prompt shared by many callers
	KindRAG          = "rag"            // retrieved documents quoted by many callers
	KindConversation = "conversation"   // multi-turn, resending the history
	KindCached       = "cached"         // identical requests a response cache answers
)

// Turn is one message of a request.
type Turn struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// CleanExchange is one request of the clean mix. A conversation's later
// turns carry the history: the harness appends each answer it receives to
// the conversation before sending the next turn (History).
type CleanExchange struct {
	// N numbers the exchanges from 0 in sending order.
	N int
	// Principal is the caller's API key.
	Principal string
	// Kind is one of the Kind constants.
	Kind string
	// Conversation groups the turns of one conversation; Turn is this
	// exchange's index in it (0 for a single request).
	Conversation int
	Turn         int
	// System is the system prompt ("" for none); User is the new user
	// message. A conversation's earlier user messages and the answers they
	// got come before it (the harness keeps them).
	System string
	User   string
	// Seed is the request's seed parameter (nil: absent).
	Seed *int64
	// Stream asks for a streamed answer.
	Stream bool
	// MaxTokens bounds the answer.
	MaxTokens int
}

// CleanOptions configure [CleanMix].
type CleanOptions struct {
	// Seed makes the mix reproducible.
	Seed uint64
	// Exchanges is the number of exchanges (at least 100).
	Exchanges int
	// Principals is the number of callers; 0 means 24.
	Principals int
	// Documents are the texts retrieval-augmented requests quote; nil
	// reads [GoDocuments].
	Documents []string
}

// CleanMix returns a reproducible mix of clean exchanges of every kind, in
// the order they are sent; the kinds are interleaved so that each meets the
// others in the verifier's memory.
func CleanMix(opts CleanOptions) []CleanExchange {
	if opts.Principals <= 0 {
		opts.Principals = 24
	}
	opts.Exchanges = max(opts.Exchanges, 100)
	r := rand.New(rand.NewPCG(opts.Seed, 0xc1ea4))
	docs := opts.Documents
	if docs == nil {
		docs = GoDocuments()
	}
	m := &mixer{r: r, opts: opts, docs: docs}
	kinds := []struct {
		kind   string
		weight int
	}{{KindRetry, 10}, {KindRegenerate, 8}, {KindTemplate, 20}, {KindFAQ, 14}, {KindParaphrase, 6},
		{KindSystemPrompt, 14}, {KindRAG, 12}, {KindConversation, 10}, {KindCached, 6}}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	for len(m.out) < opts.Exchanges {
		pick := r.IntN(total)
		for _, k := range kinds {
			if pick < k.weight {
				m.add(k.kind)
				break
			}
			pick -= k.weight
		}
	}
	m.out = m.out[:opts.Exchanges]
	for i := range m.out {
		m.out[i].N = i
	}
	return m.out
}

type mixer struct {
	r     *rand.Rand
	opts  CleanOptions
	docs  []string
	out   []CleanExchange
	convs int
}

func (m *mixer) principal() string { return fmt.Sprintf("sk-clean-%02d", m.r.IntN(m.opts.Principals)) }

func (m *mixer) pick(xs []string) string { return xs[m.r.IntN(len(xs))] }

func (m *mixer) conversation() int { m.convs++; return m.convs }

func (m *mixer) one(kind, principal, system, user string) CleanExchange {
	return CleanExchange{Principal: principal, Kind: kind, Conversation: m.conversation(), System: system, User: user,
		Stream: m.r.IntN(2) == 0, MaxTokens: 48 + m.r.IntN(80)}
}

func (m *mixer) add(kind string) {
	switch kind {
	case KindRetry:
		x := m.one(kind, m.principal(), m.pick(systemPrompts), m.freeQuestion())
		for range 2 + m.r.IntN(2) {
			m.out = append(m.out, x)
		}
	case KindRegenerate:
		x := m.one(kind, m.principal(), m.pick(systemPrompts), m.freeQuestion())
		for i := range 2 + m.r.IntN(3) {
			s := int64(i + 1)
			x.Seed = &s
			m.out = append(m.out, x)
		}
	case KindTemplate:
		tpl := templates[m.r.IntN(len(templates))]
		p := m.principal()
		for range 3 + m.r.IntN(6) {
			m.out = append(m.out, m.one(kind, p, "", strings.Replace(tpl.instruction, "%s", m.pick(tpl.inputs), 1)))
		}
	case KindFAQ, KindParaphrase:
		q := faqs[m.r.IntN(len(faqs))]
		for range 2 + m.r.IntN(4) {
			user := q.question
			if kind == KindParaphrase {
				user = m.pick(q.paraphrases)
			}
			m.out = append(m.out, m.one(kind, m.principal(), supportPrompt, user))
		}
	case KindSystemPrompt:
		for range 2 + m.r.IntN(4) {
			m.out = append(m.out, m.one(kind, m.principal(), longSystemPrompt, m.freeQuestion()))
		}
	case KindRAG:
		doc := m.docs[m.r.IntN(len(m.docs))]
		for range 2 + m.r.IntN(4) {
			chunk := m.chunk(doc)
			user := "Answer from the context only.\n\nContext:\n" + chunk + "\n\nQuestion: " + m.pick(ragQuestions)
			m.out = append(m.out, m.one(kind, m.principal(), "You answer questions about documentation.", user))
		}
	case KindConversation:
		p, c, sys := m.principal(), m.conversation(), m.pick(systemPrompts)
		for turn := range 2 + m.r.IntN(3) {
			x := CleanExchange{Principal: p, Kind: kind, Conversation: c, Turn: turn, System: sys, User: m.freeQuestion(),
				Stream: m.r.IntN(2) == 0, MaxTokens: 64}
			m.out = append(m.out, x)
		}
	case KindCached:
		x := m.one(kind, "", supportPrompt, faqs[m.r.IntN(len(faqs))].question)
		x.Stream = false
		for range 2 + m.r.IntN(3) {
			x.Principal = m.principal()
			m.out = append(m.out, x)
		}
	}
}

// chunk returns a passage of doc: a few consecutive paragraphs, as a
// retriever returns them.
func (m *mixer) chunk(doc string) string {
	paras := strings.Split(doc, "\n\n")
	if len(paras) <= 3 {
		return doc
	}
	i := m.r.IntN(len(paras) - 2)
	return strings.TrimSpace(strings.Join(paras[i:i+2+m.r.IntN(2)], "\n\n"))
}

// freeQuestion is a question of the user's own, assembled so that no two
// callers ask the same thing by chance.
func (m *mixer) freeQuestion() string {
	return fmt.Sprintf("%s %s %s?", m.pick(openers), m.pick(topics), m.pick(details))
}

// GoDocuments returns real documentation texts as found on the machine:
// the package documentation of a few standard library packages and the Go
// licence from GOROOT (names, e-mail-like strings and all), for
// retrieval-augmented requests.
func GoDocuments() []string {
	root := os.Getenv("GOROOT")
	if root == "" {
		root = goroot()
	}
	var out []string
	for _, p := range []string{"LICENSE", "src/net/http/doc.go", "src/fmt/doc.go", "src/regexp/syntax/doc.go",
		"src/encoding/json/encode.go", "src/context/context.go", "src/sync/mutex.go", "src/time/format.go",
		"src/os/exec/exec.go", "src/flag/flag.go"} {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || len(data) == 0 {
			continue
		}
		text := string(data)
		if len(text) > 24<<10 {
			text = text[:24<<10]
		}
		out = append(out, text)
	}
	if len(out) == 0 {
		out = []string{longSystemPrompt}
	}
	return out
}

// goroot asks the go command where the standard library is.
func goroot() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "/usr/local/go"
	}
	return strings.TrimSpace(string(out))
}

// FAQAnswer is what a FAQ bot answers to q: the canned answer of the
// question q asks, in any of its wordings; ok is false for other texts.
func FAQAnswer(q string) (answer string, ok bool) {
	norm := func(s string) string { return strings.ToLower(strings.Trim(strings.TrimSpace(s), "?.! ")) }
	q = norm(q)
	for _, f := range faqs {
		if norm(f.question) == q {
			return f.answer, true
		}
		for _, p := range f.paraphrases {
			if norm(p) == q {
				return f.answer, true
			}
		}
	}
	return "", false
}
