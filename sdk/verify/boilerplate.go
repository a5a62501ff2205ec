package verify

import (
	"strings"
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

// commonSet returns commonWords as a set.
func commonSet() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(commonWords) {
		m[w] = true
	}
	return m
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= utf8.RuneSelf || c == '\''
}

// informative reports whether the words overlapping text[start:end] (each
// extended to its ends within text) include one that is not a common word:
// a name, a number, a code, an uncommon word. The groups of documented test
// card numbers count as common words. Words split by an apostrophe
// are judged by their parts ("d'autres" is "d" and "autres").
func (v *Verifier) informative(text []byte, start, end int) bool {
	for start > 0 && isWordByte(text[start-1]) {
		start--
	}
	for end < len(text) && isWordByte(text[end]) {
		end++
	}
	var buf [48]byte
	for i := start; i < end; {
		if !isWordByte(text[i]) || text[i] == '\'' {
			i++
			continue
		}
		j := i
		ascii := true
		for j < end && isWordByte(text[j]) && text[j] != '\'' {
			c := text[j]
			if c >= utf8.RuneSelf {
				ascii = false
			}
			j++
		}
		w := text[i:j]
		i = j
		if len(w) > len(buf) {
			return true
		}
		var word string
		if ascii {
			for k, c := range w {
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				buf[k] = c
			}
			if !v.common[string(buf[:len(w)])] {
				return true
			}
			continue
		}
		word = strings.ToLower(string(w))
		if !v.common[word] {
			return true
		}
	}
	return false
}
