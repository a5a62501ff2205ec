package verify

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aishield/aishield/sdk/fingerprint"
)

// Provenance: where shared material came from, and whether it counts.
//
// Material in an answer is foreign when it came from what another exchange
// sent (its request), or from another exchange's answer to a different
// question. An answer may repeat what the model said to the same or a
// similar request: a retry, a regenerate, one instruction template over
// many inputs, the same FAQ asked by many callers, a shared system prompt,
// the same retrieved document, a conversation that resends its history.
// And material that only exchanges of this exchange's own principal hold
// is that principal's own.
//
// # Holders
//
// The store maps a fingerprint to its holders, opaque names to it. The
// verifier names them so that a lookup tells, for every holder, which
// exchange, which side of it and which principal:
//
//	<id>                          the request of exchange id, principal unknown ("")
//	<id>~q<ptag>                  the request of exchange id, principal tag ptag
//	<id>~i[<ptag>]                what only its instructions hold (see Shared instructions)
//	<id>~a[<ptag>].<level>.<n>    the answer of exchange id (ptag absent: unknown)
//
// The answer is recorded under a holder of its own (derived from the
// exchange ID) rather than in a tagged hash domain: a lookup then stays one
// key per fingerprint (a hash domain per side would double every lookup,
// in memory and in Redis round trips), the stores stay as they are (the
// memory store's compact lookup is untouched and allocation-free), and an
// answer gets its own TTL and its own place in the memory store's bounds.
// The cost is that a fingerprint in both the request and the answer of one
// exchange counts twice towards MaxDocFreq (it is then more readily
// boilerplate, never more readily evidence); the default memory store is
// sized for three times Inbound.MaxExchanges holders accordingly (the
// third: what only a request's instructions hold, see Shared
// instructions).
//
// The principal tag is the first 8 bytes of HMAC-SHA256 under CanaryKey
// of the principal, in hex: no raw principal is stored, processes that
// share a store (and, as they must, CanaryKey) agree on it, and a
// principal cannot be guessed from the store by dictionary. A holder
// without a tag (principal "", or a name written by an older verifier) is
// a principal of its own. The request of a principal "" keeps its bare
// exchange ID as holder name, as before: canaries and entities of such
// exchanges are found as they always were.
//
// An exchange ID must not contain '~' followed by one of these suffixes
// (the guard's IDs are hex).
//
// # Related requests
//
// A run of text shared only with another exchange's answer counts only when
// the two requests are unrelated. Two requests are related when
//
//   - their texts as written are the same once normalised (case folded,
//     runs of anything but letters and digits reduced to one space): the
//     same FAQ, a retry, a regenerate, however short the question; or
//   - the request fingerprints they share are at least half of the
//     smaller request's (relatedShare): one instruction template over
//     short inputs, a long shared system prompt before short questions,
//     the same retrieved document, a conversation and its continuation.
//
// Both look at the texts as the caller wrote them (inbound.Exchange.Texts):
// the canary line and the placeholders the guard put in what it sent are
// different in every exchange and say nothing of what was asked.
//
// There is deliberately no absolute floor in bytes: a multi-tenant
// application sends every tenant the same long system prompt, and a
// fragment of one tenant's answer in another's must still count when
// their own questions make up most of their requests (with the default
// fingerprint options, a 200-byte system prompt before 400 bytes of user
// text is a third of the request: unrelated). TestQuality's corpus (six
// system prompts of 160 to 230 bytes shared by all its exchanges, and
// their own text) measures how close unrelated requests come to the
// threshold; TestRelatedRequests pins requests of known shapes on both
// sides of it.
//
// Relatedness is computed lazily: Begin records nothing more than before
// (no store round trip is added to the proxy's hot path). A clean answer
// is recorded at Close together with its relation keys, under its answer
// holder, in the same Record call: a key derived from its exchange ID and
// the digest of its request's texts, and one derived from its exchange ID
// and each fingerprint of a consistent sample of its request's
// fingerprints (those whose mixed hash has at least level trailing zero
// bits, level the smallest that keeps the sample at most 2·relSample, n
// the sample's size, both in the holder name). Only when a run shared with
// an answer is about to be reported does the session look up, in one
// batch, the keys of that exchange for its own digest and for its own
// request fingerprints sampled at the coarser of the two levels: the hits
// estimate the shared share of each request (exactly when both requests
// have at most 2·relSample fingerprints, which covers requests of about
// 600 bytes). Keys derived from the exchange ID are held by that one
// exchange only, so holder lists truncated to MaxHolders cannot hide the
// answer, however common the shared text is. A recorded answer costs the
// store at most 2·relSample+1 such keys besides its fingerprints.
//
// # Shared instructions
//
// A run of text shared with another exchange's request counts, however
// related the requests: what an exchange sent is its own. Except an
// application's shared instructions: a company's system prompt (its
// return policy, its tone) goes with the requests of all its users, and an
// answer that words the policy as the prompt does is not a leak.
//
// So a request with instruction texts is recorded under two holders (with
// PrivateInstructions, only a request of a known principal): its
// fingerprints that only its instruction texts hold (inbound.Exchange.Roles:
// "system" and "developer", Anthropic's system, the responses API's
// instructions), under <id>~i[<ptag>], and the rest (with its canary and
// entities) under <id> or <id>~q<ptag> as before. A fingerprint whose
// k-gram is also in a text of another role (the user pasted the policy) is
// the request's, not only its instructions'. A fingerprint is then still
// one key, looked up once, and each of the request's fingerprints is still
// held by one of its holders (MaxDocFreq counts as before). For stores
// that can (fingerprint.RedisStore's RecordAll), both holders are recorded
// in one round trip.
//
// A fingerprint that the instructions of an exchange hold is the
// application's instructions: neutral, like boilerplate, wherever else it
// is held (another exchange's answer quoting the prompt, a request that
// pasted it). The instructions behind one aishield are the organisation's
// own text (an assistant's policy, a support bot's tone): an answer that
// words them is not a leak, while values in them are still foreign
// entities, and canaries are never instructions. The cost: another app's
// system prompt prose quoted in an answer is not reported.
//
// Where every principal writes its own private instructions (a service
// whose customers each configure a prompt), Options.PrivateInstructions
// (the policy's inbound.private_instructions) makes the rule stricter:
// only what the instructions of exchanges of two or more distinct known
// principals hold (among the holders listed, which are all of them below
// MaxDocFreq) is shared; what the instructions of one principal's
// exchanges hold, however many, still counts, and the instructions of
// requests of no known principal are not told apart (nothing tells an
// application's shared prompt from one customer's prompt sent twice). The
// cost there: a customer with two principals (two API keys) has its own
// system prompt treated as shared.
//
// # Repeated requests
//
// A response cache keyed on the question (or any cache that does not key
// on the whole prompt, which the canary makes different in every request)
// serves the answer the model gave to exchange X to a later exchange; a
// model that echoes its prompt has X's canary line in that answer. The
// request of exchange X is no source of foreign material for this
// exchange when it held nothing this one does not: every text of X's
// request, as written and normalised (see requestDigest), is one of this
// request's texts (the same question; or this request continues X's
// conversation). Then X's canary in this exchange's answer is not a
// signal, nor a run of X's request (its texts are this exchange's, and the
// rest is what the guard added: its canary line), and whatever X's cache
// pages or X's answer held came from texts this exchange sent too.
// Anything less (a shared system prompt, a related request by the
// fingerprint share below) keeps X's canary a signal: a canary sits next
// to X's last message, and the short private fragments that come along
// with it in a faulty engine's pages are what canaries are there to catch.
//
// To tell whether a request held nothing another does not (Repeated
// requests), a request records, with its fingerprints at Begin, a key per
// distinct text (up to relTexts of them; texts holding the exchange's own
// canary line are the guard's, not the caller's), and one key for their
// number. Only when a foreign canary is found, or a run with X's request
// is about to be reported, does the session look up, in one batch, X's
// keys for each of its own texts and for the numbers up to its own count:
// X's request is contained in this one when as many of this request's
// texts as X had are X's, and X's answer was not refused. The keys are
// the request's, not its answer's: a cache serves what the upstream
// answered as soon as it answered, before X's session has verified it,
// and a same-question caller served in that window is served its own
// question's answer. An answer refused, flagged or cut adds a key to its
// request's that says so: a cache may still serve it, and then X's
// canary in it is a signal.
//
// # Own text, cut and joined
//
// A model may read its prompt back in pieces (the paged-cache test
// server's model does, and so do real ones asked to quote): the pieces are
// this exchange's own k-grams, never looked up, but the k-grams where two
// pieces join are new, and another exchange's answer that joined the same
// pieces of the same system prompt and question (around a different
// document) holds them. A run about to count is therefore checked once
// more (session.respliced): when each of its bytes lies in a k-gram of
// this request, and every stretch between such k-grams (a piece shorter
// than a k-gram, or one cut by the start or end of the answer) is free of
// words or, trimmed to words, found as it is in the request's texts, the
// run carries nothing of another exchange's and does not count.

// relSample bounds the sample of request fingerprints an answer records
// its relation keys for: between relSample and 2·relSample of them (all
// of them when there are fewer).
const relSample = 64

// relatedShare: two requests are related when the fingerprints they share
// are at least 1/relatedShare of the smaller one's.
const relatedShare = 2

// relTexts bounds the distinct texts of a request an answer records keys
// for (see Repeated requests): a request of more is never contained in
// another.
const relTexts = 64

// Holder name suffixes.
const (
	holderSep     = '~'
	requestSuffix = 'q'
	instrSuffix   = 'i'
	answerSuffix  = 'a'
	ptagLen       = 16 // hex characters of a principal tag
)

// principalTag returns the tag under which exchanges of principal p are
// recorded, "" for an unknown principal.
func (v *Verifier) principalTag(p string) string {
	if p == "" {
		return ""
	}
	var b [ptagLen]byte
	return string(v.appendTag(b[:0], p))
}

// appendTag appends the tag of principal p (not "") to dst: HMAC-SHA256
// under CanaryKey, its first ptagLen/2 bytes in hex.
func (v *Verifier) appendTag(dst []byte, p string) []byte {
	m := v.getMAC()
	dst = hex.AppendEncode(dst, m.of("aishield-principal\x00", p)[:ptagLen/2])
	v.tagMAC.Put(m)
	return dst
}

// requestHolder returns the holder name of the request of exchange id sent
// by principal p, and the principal's tag ("" when unknown), a part of the
// name. It is safe for concurrent use (the HMACs are pooled per Verifier).
func (v *Verifier) requestHolder(id, p string) (name, ptag string) {
	if p == "" {
		return id, ""
	}
	var b strings.Builder
	b.Grow(len(id) + 2 + ptagLen)
	b.WriteString(id)
	b.WriteByte(holderSep)
	b.WriteByte(requestSuffix)
	var tag [ptagLen]byte
	b.Write(v.appendTag(tag[:0], p))
	name = b.String()
	return name, name[len(id)+2:]
}

// instructionHolder is the holder name of what only the instructions of
// the request of exchange id, of the principal whose tag is ptag (not ""),
// hold.
func instructionHolder(id, ptag string) string {
	return id + string(holderSep) + string(instrSuffix) + ptag
}

// answerHolder is the holder name of an exchange's answer, with the level
// and size of the sample of its request's fingerprints that it recorded
// relation keys for.
func answerHolder(id, ptag string, level, n int) string {
	return id + string(holderSep) + string(answerSuffix) + ptag + "." + strconv.Itoa(level) + "." + strconv.Itoa(n)
}

// holder is a store holder as the session understands it.
type holder struct {
	ref    fingerprint.Ref
	known  bool   // the store still remembered the name
	id     string // exchange ID
	answer bool   // the holder is an exchange's answer, not its request
	instr  bool   // the holder is what only the instructions of a request hold
	ptag   string // principal tag, "" unknown
	level  int    // answers: level of the sample of their request's fingerprints
	n      int    // answers: its size (-1 unknown)

	related int8 // answers: 0 not asked yet, 1 related requests, -1 not
}

// parseHolder splits a holder name (see the Holders section above). Names
// it does not recognise are requests of a principal of their own. It does
// not allocate: the strings are parts of name.
func parseHolder(name string) holder {
	h := holder{known: true, id: name, n: -1}
	i := strings.LastIndexByte(name, holderSep)
	if i < 0 || i+1 >= len(name) {
		return h
	}
	suf := name[i+1:]
	switch suf[0] {
	case requestSuffix, instrSuffix:
		if len(suf) == 1+ptagLen && isHex(suf[1:]) {
			h.id, h.ptag, h.instr = name[:i], suf[1:], suf[0] == instrSuffix
		} else if len(suf) == 1 && suf[0] == instrSuffix {
			h.id, h.instr = name[:i], true // the instructions of a request of no known principal
		}
	case answerSuffix:
		rest := suf[1:]
		ptag := ""
		if len(rest) > ptagLen && rest[ptagLen] == '.' && isHex(rest[:ptagLen]) {
			ptag, rest = rest[:ptagLen], rest[ptagLen:]
		}
		if len(rest) < 4 || rest[0] != '.' {
			return h
		}
		j := strings.IndexByte(rest[1:], '.')
		if j < 0 {
			return h
		}
		level, err1 := strconv.Atoi(rest[1 : 1+j])
		n, err2 := strconv.Atoi(rest[2+j:])
		if err1 != nil || err2 != nil || level < 0 || level > 64 || n < 0 {
			return h
		}
		h.id, h.answer, h.ptag, h.level, h.n = name[:i], true, ptag, level, n
	}
	return h
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// mix64 is the splitmix64 finaliser.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// sampleRank is the level of fingerprint h in the consistent sample: the
// sample at level j holds the fingerprints whose rank is at least j (one
// in 2^j of them, the same ones in every request).
func sampleRank(h uint64) int { return bits.TrailingZeros64(mix64(h ^ 0x5ca1ab1e0ddba11)) }

// sampleLevel returns the smallest level at which the sample of hashes hs
// holds at most 2·relSample of them (a hash repeated in hs counts each
// time: the sample may be smaller once repeats are dropped).
func sampleLevel(hs []uint64) int {
	var hist [65]int
	for _, h := range hs {
		hist[sampleRank(h)]++
	}
	level, n := 0, len(hs)
	for n > 2*relSample && level < 64 {
		n -= hist[level]
		level++
	}
	return level
}

// sample appends to dst the distinct hashes of hs whose rank is at least
// level, in increasing order.
func sample(dst, hs []uint64, level int) []uint64 {
	n := len(dst)
	for _, h := range hs {
		if sampleRank(h) >= level {
			dst = append(dst, h)
		}
	}
	slices.Sort(dst[n:])
	return append(dst[:n], slices.Compact(dst[n:])...)
}

// relTag is the part of the relation keys of exchange id that names it.
func relTag(id string) uint64 {
	sum := sha256.Sum256([]byte("aishield-related\x00" + id))
	return binary.BigEndian.Uint64(sum[:8])
}

// relKey is the store key that says the request of the exchange whose
// relTag is tag held fingerprint (or digest) h.
func relKey(tag, h uint64) uint64 { return mix64(tag ^ mix64(h+0x2545f4914f6cdd1d)) }

// digestTag sets apart a request digest from the fingerprints in relation
// keys; textTag the digest of one text from a request's; countTag the
// number of a request's texts.
const (
	digestTag = 0x9e3779b97f4a7c15
	textTag   = 0x6a09e667f3bcc909
	countTag  = 0x3c6ef372fe94f82b
	// unheldTag marks an exchange whose answer was refused, flagged or
	// cut: not an answer a cache may hand to a same-question caller.
	unheldTag = 0x510e527fade682d1
)

// requestDigest returns the digest of texts as written, normalised: case
// folded, every run of characters other than letters and digits one
// space, leading and trailing ones dropped; texts are separated. Two
// requests that differ only in case, spacing or punctuation have the same
// digest. It is FNV-1a (64 bits), keyed by nothing: it is only ever stored
// mixed into a relation key.
func requestDigest(texts []string) uint64 {
	d, _ := requestDigests(texts, nil)
	return d
}

// requestDigests returns requestDigest(texts) and appends to per the
// digest of each text on its own (normalised the same way, tagged apart
// from a request's), in one pass.
func requestDigests(texts []string, per []uint64) (uint64, []uint64) {
	const (
		prime = 1099511628211
		basis = 14695981039346656037
	)
	h, one := uint64(basis), uint64(basis)
	put := func(b byte) {
		h = (h ^ uint64(b)) * prime
		one = (one ^ uint64(b)) * prime
	}
	for _, t := range texts {
		one = basis
		space := false
		started := false
		for i := 0; i < len(t); {
			c := t[i]
			if c < utf8.RuneSelf {
				// ASCII, the common case, without the Unicode tables.
				i++
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				} else if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
					space = started
					continue
				}
				if space {
					put(' ')
					space = false
				}
				started = true
				put(c)
				continue
			}
			r, size := utf8.DecodeRuneInString(t[i:])
			i += size
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				space = started
				continue
			}
			if space {
				put(' ')
				space = false
			}
			started = true
			r = unicode.ToLower(r)
			var b [utf8.UTFMax]byte
			for _, c := range b[:utf8.EncodeRune(b[:], r)] {
				put(c)
			}
		}
		put(0) // texts are separated
		per = append(per, one^textTag)
	}
	return h ^ digestTag, per
}

// requestSketch returns this exchange's request fingerprints (repeats
// included) and the digest of its texts, as written (computed once): the
// canary line and placeholders the guard put in the texts it sent say
// nothing of what the caller asked. Texts that were sent as written are not
// fingerprinted again.
func (s *session) requestSketch() ([]uint64, uint64) {
	if !s.hasSketch {
		s.hasSketch = true
		s.reqFP = s.reqFP[:0]
		for _, sp := range s.written {
			s.reqFP = append(s.reqFP, s.record[sp.start:sp.end]...)
		}
		for _, i := range s.rewrite {
			// Not s.win: it is the response's, and may be mid-stream.
			if s.rwin == nil {
				s.rwin = fingerprint.NewWinnower(s.v.opts.Fingerprint)
			}
			s.rwin.Reset()
			_, _ = s.rwin.Write(s.req[s.texts[i].start:s.texts[i].end])
			s.rfps = s.rwin.TakeAppend(s.rfps[:0])
			for _, f := range s.rfps {
				s.reqFP = append(s.reqFP, f.Hash)
			}
		}
		s.textDigests()
	}
	return s.reqFP, s.digest
}

// textDigests computes, once, the digest of this exchange's texts and the
// digests of its distinct texts (see Repeated requests), the guard's
// canary line left out.
func (s *session) textDigests() {
	if s.hasDigests {
		return
	}
	s.hasDigests = true
	texts := s.ex.Texts
	if len(texts) == 0 {
		texts = s.ex.Sent
	}
	s.digest, s.textDig = requestDigests(texts, s.textDig[:0])
	k := 0
	for i, d := range s.textDig {
		if s.canary == "" || !strings.Contains(texts[i], s.canary) {
			s.textDig[k] = d
			k++
		}
	}
	slices.Sort(s.textDig[:k])
	s.textDig = slices.Compact(s.textDig[:k])
}

// appendTextKeys appends to dst the keys of this exchange's distinct texts
// and of their number (see Repeated requests), none when there are more
// than relTexts of them; the request records them.
func (s *session) appendTextKeys(dst []uint64) []uint64 {
	s.textDigests()
	k := len(s.textDig)
	if k == 0 || k > relTexts {
		return dst
	}
	tag := relTag(s.ex.ID)
	for _, d := range s.textDig {
		dst = append(dst, relKey(tag, d))
	}
	return append(dst, relKey(tag, countTag+uint64(k)))
}

// relationKeys appends to dst the relation keys this exchange's answer
// records (see Related requests, and Repeated requests for the keys of
// its texts) and returns them with the level and size of the sample.
func (s *session) relationKeys(dst []uint64) ([]uint64, int, int) {
	fps, digest := s.requestSketch()
	level := sampleLevel(fps)
	tag := relTag(s.ex.ID)
	dst = append(dst, relKey(tag, digest))
	n := len(dst)
	dst = sample(dst, fps, level)
	for i := n; i < len(dst); i++ {
		dst[i] = relKey(tag, dst[i])
	}
	return dst, level, len(dst) - n
}

// containsRequest reports whether every text of the request of exchange
// id is one of this exchange's (see Repeated requests), asking the store
// once per exchange.
func (s *session) containsRequest(ctx context.Context, id string) (bool, error) {
	for _, c := range s.contains {
		if c.id == id {
			return c.yes, nil
		}
	}
	s.requestSketch()
	ours := s.textDig
	yes := false
	if len(ours) > 0 {
		tag := relTag(id)
		keys := s.relKeys[:0]
		for _, d := range ours {
			keys = append(keys, relKey(tag, d))
		}
		for k := 1; k <= min(len(ours), relTexts); k++ {
			keys = append(keys, relKey(tag, countTag+uint64(k)))
		}
		keys = append(keys, relKey(tag, unheldTag))
		s.relKeys = keys
		hs, err := s.v.store.Lookup(ctx, keys)
		if err != nil {
			return false, fmt.Errorf("verify: repeated request lookup: %w", err)
		}
		if len(hs) != len(keys) {
			return false, fmt.Errorf("verify: repeated request lookup: %d answers for %d keys", len(hs), len(keys))
		}
		hits := 0
		for _, x := range hs[:len(ours)] {
			if x.Count > 0 {
				hits++
			}
		}
		// Theirs had as many texts as ours share with them, and their
		// answer was not refused.
		yes = hits > 0 && hits <= relTexts && hs[len(ours)+hits-1].Count > 0 && hs[len(hs)-1].Count == 0
	}
	s.contains = append(s.contains, containment{id, yes})
	return yes, nil
}

// containment memoises containsRequest.
type containment struct {
	id  string
	yes bool
}

// sharedInstructions reports whether holders (others of them) hold the
// material as an application's instructions (see Shared instructions): the
// instructions of any exchange, or, with PrivateInstructions, of exchanges
// of two or more distinct known principals.
func (s *session) sharedInstructions(holders []fingerprint.Ref, others int) bool {
	private := s.v.opts.PrivateInstructions
	if private && others < 2 {
		return false
	}
	first := ""
	for _, src := range holders {
		switch h := s.holderOf(src); {
		case h.instr && !private:
			return true
		case !h.instr || h.ptag == "":
		case first == "":
			first = h.ptag
		case h.ptag != first:
			return true
		}
	}
	return false
}

// related reports whether the request of the exchange whose answer is h
// is related to this exchange's (see Related requests), asking the store
// once per answer.
func (s *session) related(ctx context.Context, h *holder) (bool, error) {
	if h.related != 0 {
		return h.related > 0, nil
	}
	h.related = -1
	fps, digest := s.requestSketch()
	level := max(sampleLevel(fps), h.level)
	tag := relTag(h.id)
	keys := sample(append(s.relKeys[:0], relKey(tag, digest)), fps, level)
	for i := 1; i < len(keys); i++ {
		keys[i] = relKey(tag, keys[i])
	}
	s.relKeys = keys
	hs, err := s.v.store.Lookup(ctx, keys)
	if err != nil {
		return false, fmt.Errorf("verify: related request lookup: %w", err)
	}
	if len(hs) != len(keys) {
		return false, fmt.Errorf("verify: related request lookup: %d answers for %d keys", len(hs), len(keys))
	}
	if hs[0].Count > 0 {
		h.related = 1 // the same texts
		return true, nil
	}
	shared, ours := 0, len(keys)-1
	for _, x := range hs[1:] {
		if x.Count > 0 {
			shared++
		}
	}
	// Their sample at the common level: theirs thinned by the levels
	// between (in expectation), or unknown.
	smaller := ours
	if h.n >= 0 {
		smaller = min(smaller, h.n>>(level-h.level))
	}
	if shared > 0 && relatedShare*shared >= smaller {
		h.related = 1
	}
	return h.related > 0, nil
}
