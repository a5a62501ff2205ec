package verify

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// builtinBoilerplate are stock phrases that assistants write in answer after
// answer, in English and French. Their k-grams never count as evidence of
// contamination, so that a fresh store, which does not know yet how common
// they are, does not flag two answers that share one. Options.Boilerplate
// adds to them (shared system prompts, a deployment's own disclaimers).
var builtinBoilerplate = []string{
	// English openings.
	"Sure! Here is", "Sure, here is", "Certainly! Here is", "Certainly, here is",
	"Of course! Here is", "Of course, here is", "Great question!", "Thanks for your question.",
	"Thank you for your question.", "Thank you for reaching out.", "Thanks for reaching out.",
	"Thank you for sharing the details.", "Thank you for the details.", "I'd be happy to help with that.",
	"I would be happy to help you with that.", "I'd be glad to help.", "Happy to help!",
	"Here is a summary of", "Here is a concise summary of the points you raised.",
	"Here's a summary of the key points:", "Here are the key points:", "Here is what I found:",
	"Below is a draft you can adapt:", "Let me break this down step by step.", "Let's go through it step by step.",
	"Based on the information you provided,", "Based on what you shared,", "As requested, here is",
	"I understand your concern.", "I apologize for the confusion.", "I'm sorry for the inconvenience.",
	// English closings.
	"Let me know if you have any other questions.", "Let me know if you have any questions.",
	"Let me know if you need anything else.", "Let me know if you'd like me to adjust anything.",
	"Let me know if you would like any changes.", "Feel free to ask if you have any other questions.",
	"Please let me know if you need further assistance.", "Please let me know if you have any questions.",
	"If you have any other questions, feel free to ask.", "If you need anything else, just let me know.",
	"I hope this helps!", "I hope this helps.", "Hope this helps!", "I hope this helps you move forward with the next steps.",
	"Is there anything else I can help you with?", "Would you like me to help with anything else?",
	"Good luck with your project!", "Please double-check the figures before sending anything to the client.",
	"Please review the details before sending.", "Please verify this information with the relevant team.",
	"I'm an AI language model and", "As an AI language model,", "I don't have access to real-time data.",
	"This is not legal advice.", "This is not financial advice.", "Consult a qualified professional for advice specific to your situation.",
	"Best regards,", "Kind regards,", "Thanks again!",
	// Example values that models write in answer after answer (RFC 2606
	// domains, documented test cards).
	"user@example.com", "@example.com", "@example.org", "https://example.com/", "https://api.example.com/", "https://example.org/",
	"https://www.example.com/", "4242 4242 4242 4242", "4111 1111 1111 1111", "5555 5555 5555 4444", "4000 0000 0000 0002",
	// French openings and closings.
	"Bien sûr ! Voici", "Bien sûr, voici", "Voici un résumé de", "Voici un résumé des points principaux :",
	"Voici les points clés :", "Merci pour votre question.", "Merci pour votre message.", "Merci de m'avoir contacté.",
	"Je serais ravi de vous aider.", "Je suis là pour vous aider.", "Avec plaisir !", "D'après les informations fournies,",
	"N'hésitez pas si vous avez d'autres questions.", "N'hésitez pas à me poser d'autres questions.",
	"N'hésitez pas à me dire si vous souhaitez des modifications.", "Dites-moi si vous avez besoin d'autre chose.",
	"Faites-moi savoir si vous avez besoin d'aide supplémentaire.", "J'espère que cela vous aide.", "J'espère que cela vous sera utile.",
	"Y a-t-il autre chose que je puisse faire pour vous ?", "Je vous prie de vérifier les chiffres avant de les envoyer.",
	"Bonne continuation !", "Cordialement,", "Bien cordialement,",
}

// BuiltinBoilerplate returns the stock assistant phrases (English and
// French) whose text never counts as cross-exchange evidence, in addition
// to Options.Boilerplate.
func BuiltinBoilerplate() []string { return append([]string(nil), builtinBoilerplate...) }

// commonWords are frequent English and French words. A k-gram made only of
// them (and spaces and punctuation) carries no information about where a
// text came from, so it never counts as cross-exchange evidence: "let me
// know if you" may be shared by any two answers, "Northwind's 4,200 EUR"
// may not.
const commonWords = `a about above after again against all almost also although always am among an and another any anyone
anything are around as ask asked at available away back based be because been before being below best better between both
but by can cannot case change changes check clear could current day days detail details did different do does doing done
down during each early easy either else end enough even every example few find first following for found free from full
further get give given go going good great had has have having he help her here high him his how however i if important
in include including information instead into is issue it its just keep kind know last later least less let like likely
long look made make many may me might more most much must my need needed needs new next no not note now number of off often
on once one only open or order other our out over own part per please point points possible provide provided question
questions quite rather really regarding related request right said same see send set several shall she should show simply
since so some something soon specific start step steps still such summary support sure take team than thank thanks that
the their them then there these they thing things think this those through time to today together too under understand
until up update us use used using very via want was way we well were what when where whether which while who whole why will
with within without work would yes yet you your yours also add added adjust anything appreciate assist assistance certainly
concern confirm course draft feel glad happy hope hoping like moving forward ready reach reaching review sharing sorry
thank welcome wish
au aux avec avez avoir bien bon bonne ce cela ces cet cette chose comme comment dans de des du elle en encore est et être
faire fait il ils je la le les leur lui mais me merci moi mon ne nous on ou où par pas plus pour pouvez puis qu que quel
quelle qui sa sans se ses si son sont sur ta te tes toi ton tous tout toute toutes très tu un une vos votre vous voici
voilà y autre autres besoin aide aider cordialement hésitez informations question questions plaisir points principaux
résumé suite souhaitez utile vérifier chiffres avant envoyer
example examples sample test card sandbox dummy placeholder com org net www http https api
4242 4111 1111 5555 4444 4000 0000 0002`

// commonSet returns commonWords as a set of word hashes (see nextWord).
func commonSet() hashSet {
	m := newHashSet(0)
	for _, w := range strings.Fields(commonWords) {
		forWords([]byte(w), func(h uint64, _ bool) { m.add(h) })
	}
	return m
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= utf8.RuneSelf || c == '\''
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// nextWord finds the first word of text at or after i: a maximal run of
// letters, digits and non-ASCII runes, split at apostrophes ("d'autres" is
// "d" and "autres"). It returns its span, its hash (FNV-1a of its Unicode
// simple lower case) and whether it is name-like (holds an upper-case letter
// or a digit); start == len(text) when there is none.
func nextWord(text []byte, i int) (start, end int, h uint64, name bool) {
	for i < len(text) && (!isWordByte(text[i]) || text[i] == '\'') {
		i++
	}
	start = i
	h = fnvOffset
	for i < len(text) {
		c := text[i]
		if !isWordByte(c) || c == '\'' {
			break
		}
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
				name = true
			} else if c <= '9' {
				name = true
			}
			h = (h ^ uint64(c)) * fnvPrime
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		i += size
		if r == utf8.RuneError && size == 1 {
			h = (h ^ uint64(c)) * fnvPrime
			continue
		}
		if l := unicode.ToLower(r); l != r {
			r, name = l, true
		}
		var buf [utf8.UTFMax]byte
		n := utf8.EncodeRune(buf[:], r)
		for _, b := range buf[:n] {
			h = (h ^ uint64(b)) * fnvPrime
		}
	}
	return start, i, h, name
}

// forWords calls fn with the hash of each word of text (see nextWord) and
// whether it is name-like.
func forWords(text []byte, fn func(h uint64, name bool)) {
	for i := 0; i < len(text); {
		start, end, h, name := nextWord(text, i)
		if start == len(text) {
			return
		}
		fn(h, name)
		i = end
	}
}

// minWordLen is the length of the shortest informative word: single
// letters and digits and two-byte tokens ("x", "6", "v1", "id") are too
// few bits to tell one text from another.
const minWordLen = 3

// informativeWords appends to dst the spans of the informative words
// overlapping text[start:end] (each extended to its ends within text):
// words that are neither common words nor the user's own name-like data
// (own holds the request's name-like words). A name-like word is the
// user's own when the request holds it name-like too: answers quote the
// user's names, codes and identifiers inside stock wording that other
// answers share ("I will contact Xavier Castellanos at XAVIER.CAST…"),
// which says nothing about another exchange. Lower-case vocabulary always
// counts, even when the request used it too, so that foreign prose stays
// evidence. The groups of documented test card numbers count as common
// words.
func (v *Verifier) informativeWords(text []byte, start, end int, own *hashSet, dst []span) []span {
	for start > 0 && isWordByte(text[start-1]) {
		start--
	}
	for end < len(text) && isWordByte(text[end]) {
		end++
	}
	for i := start; i < end; {
		ws, we, h, name := nextWord(text[:end], i)
		if ws == end {
			break
		}
		i = we
		if v.informativeWord(ws, we, h, name, own) {
			dst = append(dst, span{ws, we})
		}
	}
	return dst
}

// informativeWord reports whether the word text[ws:we] of hash h (see
// nextWord) is informative (see informativeWords).
func (v *Verifier) informativeWord(ws, we int, h uint64, name bool, own *hashSet) bool {
	return we-ws >= minWordLen && !v.common.has(h) && !(name && own != nil && own.has(h))
}
