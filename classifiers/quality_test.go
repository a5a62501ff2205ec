package classifiers

import (
	"context"
	"strings"
	"testing"
)

// The quality suite measures recall and false alarms on sentences written
// for it in the styles people use: names in ordinary sentences, a name
// alone after a greeting, a request or a signature, phone numbers with
// extensions, trunk prefixes and local numbers after a cue. Each sentence
// marks what must be found with [brackets]; a finding counts only when its
// span is exactly the marked one. A test fails when a measure falls below
// its goal.

// fullNameTemplates hold one {N} each: a person's full name in an ordinary
// sentence.
var fullNameTemplates = []string{
	"Yesterday {N} presented the quarterly budget to the board.",
	"The contract was signed by {N} on behalf of the supplier.",
	"{N} joined the London office in March.",
	"Please forward the invoice to {N} before Friday.",
	"I had lunch with {N} and we talked about the migration.",
	"According to {N}, the shipment left Rotterdam on time.",
	"Our new project lead, {N}, starts on Monday.",
	"{N} will present the results at the Berlin conference.",
	"The report written by {N} was approved without changes.",
	"Can you set up a call with {N} next week?",
	"We interviewed {N} for the data engineer role.",
	"The patient, {N}, was discharged on Tuesday.",
	"{N} said the servers would be back online by noon.",
	"I forwarded the complaint from {N} to the legal team.",
	"Last month {N} moved to the Lisbon branch.",
	"The keynote was given by {N}, who leads the research group.",
	"Meeting notes taken by {N} are in the shared folder.",
	"Ask {N} whether the visa application went through.",
	"{N} and I reviewed the pull request together.",
	"The tenant, {N}, reported a leak in the kitchen.",
	"Her manager {N} approved the holiday request.",
	"We owe {N} an apology for the delayed refund.",
	"The award went to {N} for her work on accessibility.",
	"Send the draft to {N} and copy the finance team.",
	"{N} asked for a copy of the signed agreement.",
	"In the photo, {N} is standing next to the new turbine.",
	"The customer {N} called twice about the same order.",
	"Thanks to {N}, the release shipped a day early.",
	"The flight was booked for {N} and two colleagues.",
	"{N} explained the new expense policy during the all-hands.",
	"I spoke to {N} about the budget overrun.",
	"Our accountant {N} will file the return in April.",
	"A letter from {N} arrived this morning.",
	"The hiring committee recommended {N} for promotion.",
	"{N} has been our contact at the bank since 2019.",
	"Please welcome {N} to the support team!",
	"The deposition of {N} is scheduled for Thursday.",
	"My neighbour {N} keeps an eye on the house when we travel.",
	"The ticket was assigned to {N} after the outage.",
	"{N} wrote the first draft of the privacy notice.",
	"Le dossier de {N} est complet depuis lundi.",
	"J'ai rencontré {N} à la réunion de Lyon.",
}

// fullNames are given name and surname (or surname and given name where
// that is the usual order), of many origins.
var fullNames = []string{
	"Emily Carter", "James Whitfield", "Sarah Thompson", "Michael O'Connor", "Rebecca Hughes", "Daniel Foster",
	"Laura Bennett", "Thomas Harding", "Olivia Grant", "Jack Pemberton",
	"Amélie Fontaine", "Julien Moreau", "Camille Lefebvre", "Hélène Marchand", "Nicolas Girard", "Élodie Rousseau",
	"Mathieu Blanchard", "Claire Dubois", "Antoine Mercier", "Inès Benali",
	"Jürgen Schneider", "Katrin Hoffmann", "Lukas Wagner", "Susanne Becker", "Matthias Krüger", "Anja Schulz",
	"Alejandro Ruiz", "Lucía Fernández", "Javier Morales", "Carmen Ortega", "Diego Castillo", "Valentina Rojas",
	"Mateo Herrera", "Ximena Salazar",
	"Giulia Romano", "Matteo Conti", "Francesca Greco", "Lorenzo Ricci", "Chiara Colombo",
	"Sanne de Vries", "Joost van den Berg", "Femke Jansen", "Thijs Bakker",
	"Tomasz Kowalski", "Agnieszka Nowak", "Krzysztof Wiśniewski", "Magdalena Wójcik", "Paweł Lewandowski",
	"Dmitri Volkov", "Olga Petrova", "Nikolai Sokolov", "Oksana Shevchenko",
	"Chidi Okonkwo", "Ngozi Adeyemi", "Oluwaseun Adebayo", "Emeka Nwosu", "Folake Balogun", "Tunde Bakare",
	"Kwame Mensah", "Akosua Boateng", "Wanjiru Kamau", "Otieno Odhiambo",
	"Priya Raman", "Arjun Mehta", "Ananya Iyer", "Rohan Gupta", "Deepika Nair", "Vikram Reddy", "Sneha Kulkarni",
	"Rahul Banerjee", "Ayesha Siddiqui", "Imran Qureshi", "Farhan Chowdhury",
	"Wei Zhang", "Xiaoming Huang", "Jun Zhou", "Mei Lin", "Zhang Wei",
	"Haruto Sato", "Yuki Tanaka", "Kenji Watanabe", "Aiko Suzuki", "Takeshi Yamamoto",
	"Minjun Kim", "Jiwoo Lee", "Seoyeon Choi",
	"Linh Pham", "Minh Nguyen", "Nguyen Van An",
	"Omar Haddad", "Layla Nasser", "Karim Mansour", "Rania Khoury", "Youssef El Amrani",
	"Mehmet Yılmaz", "Elif Demir", "Emre Kaya", "Zeynep Çelik",
	"Reza Tehrani", "Shirin Ahmadi", "Nikos Papadopoulos", "Eleni Georgiou",
	"João Silva", "Beatriz Costa", "Thiago Almeida", "Mariana Souza",
	"Lars Eriksson", "Ingrid Johansson", "Mikko Virtanen", "Aino Korhonen",
	"Siobhan Murphy", "Ciaran Doyle", "Noa Cohen", "Yossi Levi", "Zsófia Nagy", "Petra Svobodová",
}

// unlistedFullNames are full names none of whose words is in the name
// lists: only the context (cues, roles, verbs) can find them. They measure
// what the lists do not give (the sentences and the lists share their
// author, so the measures above are optimistic).
var unlistedFullNames = []string{
	"Ottoline Brackenbury", "Ignatius Featherstone", "Perpetua Okwuosa", "Leocadia Wróblewicz", "Anselm Quirinal",
	"Bartholomew Ashdown", "Cosima Terhaar", "Dagny Fjellstad", "Evander Kolokotronis", "Fenella Tregothnan",
	"Gudrun Østergaard", "Hyacinth Mbeki-Lowe", "Isolde Rautenbach", "Jovita Sandoval-Ibarra", "Kasimir Wendeborn",
	"Lysandra Papazoglou", "Mordecai Haverkamp", "Nerissa Achterberg", "Orrin Blackwood", "Philippa Strathearn",
	"Quintus Abernethy", "Rosalind Pennywhistle", "Severin Lagerkvist", "Tancredi Buonarroti", "Ulrika Söderqvist",
	"Wilhelmina Oosterhuis", "Xanthe Vourvoulias", "Yevgenia Trubetskaya", "Zebulon Hargreave", "Aurelio Zambrotta",
	"Benedikta Kollár", "Caspian Mereweather", "Florentyna Grzybowska", "Gwendolyn Pryce-Jenkins", "Horatio Fairweather",
	"Iolanthe Drummond", "Jocasta Villiers", "Ludovica Sforzini", "Marisol Quintanilla", "Nikodem Przybysz",
	"Octavia Rennington", "Paloma Etxeberria",
}

// unlistedGivenNames are given names in no list.
var unlistedGivenNames = []string{
	"Ottoline", "Ignatius", "Perpetua", "Leocadia", "Anselm", "Bartholomew", "Cosima", "Dagny", "Evander", "Fenella",
	"Gudrun", "Hyacinth", "Isolde", "Jovita", "Kasimir", "Lysandra", "Mordecai", "Nerissa", "Orrin", "Philippa",
	"Quintus", "Rosalind", "Severin", "Tancredi", "Ulrika", "Wilhelmina", "Xanthe", "Yevgenia", "Zebulon", "Aurelio",
	"Benedikta", "Caspian", "Florentyna", "Gwendolyn", "Horatio", "Iolanthe", "Jocasta", "Ludovica", "Marisol",
	"Nikodem", "Octavia", "Paloma",
}

// aloneTemplates hold one {G} each: a name written alone after a cue.
var aloneTemplates = []string{
	"Dear {G},\nThank you for your quick reply.",
	"Hi {G}, could you send me the latest figures?",
	"Hello {G}! The meeting moved to 3pm.",
	"Could you ask {G} to review the contract?",
	"Please call {G} when the delivery arrives.",
	"cc {G} on the thread, please.",
	"Thanks {G}, that fixed it.",
	"Thanks, {G}. I'll take it from here.",
	"According to {G}, the audit starts next week.",
	"See the attached file.\n\nBest regards,\n{G}",
	"Let me know.\n\nKind regards,\n{G}\n",
	"Talk soon.\nCheers,\n{G}",
	"See you there.\n— {G}",
	"Bonjour {G}, pouvez-vous confirmer la date ?",
	"Merci {G} pour ton aide.",
	"Bonne journée.\n\nCordialement,\n{G}",
	"Hey {G}, are you free tomorrow?",
	"Let me check with {G} and get back to you.",
	"I'll ping {G} about the deployment.",
	"Tell {G} the parcel is at reception.",
	"Can you remind {G} about the dentist appointment?",
	"Selon {G}, le dossier est complet.",
	"Salut {G}, tu as reçu mon message ?",
	"Thank you {G} for organising the offsite.",
	"Spoke to {G} this morning about the invoice.",
	"Yours sincerely,\n{G}",
	"Email {G} the slides before the call.",
	"Hola {G}, ¿puedes revisar el informe?",
	"Ciao {G}, ci vediamo domani.",
	"Hallo {G}, danke für die Nachricht.",
	"Thanks,\n{G}",
	"Good morning {G}, the report is attached.",
	"Chère {G}, merci pour votre message.",
	"Forward this to {G}, she handles refunds.",
	"I met {G} at the conference in Lyon.",
}

// aloneNames are given names of many origins.
var aloneNames = []string{
	"Maria", "Tomasz", "Oluwaseun", "Priya", "Chidi", "Aisha", "Hiroshi", "Mei", "Sven", "Ingrid", "Mateo",
	"Lucía", "Kwame", "Fatima", "Dmitri", "Siobhan", "Arjun", "Yuki", "Emeka", "Zeynep", "Ngozi", "Rohan",
	"Nadia", "Pierre", "Camille", "Giulia", "Jürgen", "Olga", "Wanjiru", "Thiago", "Leila", "Minh", "Hana",
	"Omar", "Farida", "Bogdan", "Anneke", "Rafael", "Ximena", "Tunde", "Kofi", "Amara", "Jin", "Ravi",
	"Deepa", "Sanjay", "Ayesha", "Imran", "Elif", "Mehmet", "Nikos", "Eleni", "João", "Mariana", "Lars",
	"Aino", "Mikko", "Noa", "Yossi", "Zsófia", "Petra", "Claire", "Hélène", "Julien", "Mathilde", "Sophie",
	"Oliver", "Emily", "Jack", "Rebecca", "Daniel", "Laura", "Sarah", "Thomas", "Anna", "Lukas", "Katrin",
	"Matteo", "Chiara", "Sanne", "Joost", "Agnieszka", "Paweł", "Oksana", "Akosua", "Otieno", "Ananya",
	"Deepika", "Farhan", "Xiaoming", "Haruto", "Aiko", "Kenji", "Minjun", "Seoyeon", "Linh", "Layla",
	"Karim", "Rania", "Reza", "Shirin", "Beatriz", "Ciaran", "Yusuf", "Nour", "Bongani", "Thandiwe",
	"Ifeoma", "Tariq", "Selin",
}

// noNameSentences have capitalised words that are not people: sentence
// starts, products, companies, places, months, weekdays, teams, and cue
// words followed by something else than a name.
var noNameSentences = []string{
	"Dear Sir or Madam,\nPlease find the form attached.",
	"Hi Team, the build is green again.",
	"Hello World is the first program most people write.",
	"Dear Customer, your order has shipped.",
	"Hi All, the office is closed on Monday.",
	"Thanks Again for your patience.",
	"Best regards,\nThe Support Team",
	"Kind regards,\nCustomer Service",
	"cc Legal and Finance on the thread.",
	"Ask Google Cloud support about the quota.",
	"Call Close on the file when you are done.",
	"According to Gartner Research, spending will grow.",
	"Yesterday Microsoft Teams crashed during the demo.",
	"New York City Council met on Wednesday.",
	"Visual Studio Code shows the error inline.",
	"Amazon Web Services raised the instance limit.",
	"The Golden Gate Bridge was closed for the marathon.",
	"Black Friday Sale ends on Sunday night.",
	"We moved the servers from Frankfurt to Dublin in October.",
	"Red Hat Enterprise Linux is supported until June.",
	"The General Data Protection Regulation applies from May.",
	"Our Data Protection Officer reviewed the notice.",
	"Machine Learning Engineer, Customer Success Manager and Sales Director roles are open.",
	"Quarterly Business Review slides are in the Drive.",
	"Happy New Year from everyone at Acme!",
	"Good Morning America aired the interview.",
	"The European Commission published the draft in April.",
	"Silicon Valley Bank failed in March.",
	"Central Park is busy on Saturday afternoons.",
	"Open the Settings menu and select Privacy.",
	"Mount Everest is 8,849 metres high.",
	"Windows Server 2022 reached general availability.",
	"Apple Pay and Google Pay are both accepted.",
	"Pull Request Review Guidelines were updated.",
	"Monday Morning Meeting moved to Room Four.",
	"Project Phoenix Kickoff is on the calendar.",
	"The United Nations General Assembly opened in September.",
	"Rue de Rivoli and Place Vendôme are closed to traffic.",
	"Bonjour à tous, la réunion est reportée.",
	"Merci Beaucoup pour votre retour.",
	"Cordialement,\nLe Service Client",
	"Selon Le Monde, la réforme sera votée en juin.",
	"Hello Kitty merchandise sold out.",
	"Thanks for the Feedback, it helps.",
	"The Lord High Chancellor sits in Chancery.",
	"Use Read and Write to copy the Buffer.",
	"Call Flush before Close to write pending data.",
	"Regards,\nIT Helpdesk",
	"Dear Valued Member, your renewal is due.",
	"Hey Siri, set a timer.",
	"Ask Jeeves was a search engine.",
	"Tell Me More is a podcast about design.",
	"Email Marketing Best Practices for Small Teams",
	"Spoke to Accounts Payable about the invoice.",
	"Hi There, welcome to the portal.",
	"Thanks Everyone for joining the call.",
	"See you in Paris, Texas, next Tuesday.",
	"Los Angeles Lakers won on Thursday.",
	"Costa Rica and Puerto Rico were on the itinerary.",
	"Sri Lanka Telecom upgraded the backbone.",
}

// phoneSentences mark phone numbers as people write them: international
// and national formats, extensions, trunk prefixes, local numbers after a
// cue.
var phoneSentences = []string{
	"Call me at [+1 212 736 5000] tomorrow.",
	"Our front desk is [(212) 736-5000] during office hours.",
	"Direct line: [212-736-5000x309]",
	"Reach him on [(415)736-0199 ext. 72] in the morning.",
	"Dial [212.736.5000 ext 14] and ask for billing.",
	"Phone [+1-212-736-5000 x22] any weekday.",
	"Switchboard [+44 (0)20 7123 4567] then press 2.",
	"London office: [+44 (0)161 496 1234]",
	"Mobile [07911 123456] after 6pm.",
	"Ring the Manchester office on [0161 234 5678].",
	"UK HQ [+44 20 7123 4567], ask for reception.",
	"Tél : [+33 6 12 34 56 78]",
	"Appelez le [01 42 68 53 00] pour un rendez-vous.",
	"Mon portable : [06 12 34 56 78]",
	"Le standard est au [01.42.68.53.00], poste 12.",
	"Le siège : [+33 (0)1 42 68 53 00]",
	"Telefon [+49 30 901820] (Zentrale)",
	"Rufen Sie [030 901820] an.",
	"Büro München: [+49 89 1234567]",
	"Teléfono [612 345 678] por la tarde.",
	"Llámame al [+34 612 345 678].",
	"Oficina [91 123 45 67]",
	"Telefono [+39 06 6982 1234]",
	"Chiamare il [06 6982 1234] in orario d'ufficio.",
	"Bruxelles [+32 2 555 12 12]",
	"Zürich [+41 44 668 18 00]",
	"Ottawa: [+1 613 996 5555]",
	"call me on [736 5012] after six",
	"you can reach her at [4821-7730].",
	"Mobile: [9123 4567]",
	"call him on [836-2241] tonight",
	"text me on [8294 1123] when you land",
	"her cell is [736-5012]",
	"Phone: [486 2201]",
	"tel. [3456 7890]",
	"ring me on [5829 3310]",
	"reach us at [731 4400] between 9 and 5",
	"WhatsApp [+44 7911 123456]",
	"Fax [+1 212 736 5001]",
	"Contact: [(646) 736-2040]",
	"My number is [917-736-4410].",
	"Ping me at [+1 (917) 736 4410].",
	"Support hotline [+1 800 736 5000].",
	"From abroad dial [0044 20 7123 4567].",
	"Depuis l'étranger : [0033 1 42 68 53 00]",
	"The new number is [+33 1 42 68 53 00].",
	"Call [020 7123 4567] and quote your reference.",
	"Cell [+1 415 736 0199], leave a message.",
	"Call the clinic on [0161 850 0301] instead.",
	"Reception [+44 (0) 20 7123 4567 ext. 214]",
	"Standard : [04 72 10 30 30]",
	"Contact Lyon [+33 4 72 10 30 30]",
	"Oficina central [+34 91 123 45 67]",
	"Notruf Zentrale [+49 (0)30 901820]",
	"Ufficio di Milano [+39 02 1234 5678]",
	"Help desk [415-736-0199 x 5]",
	"Sales: [+1 646 736 2040 ext. 300]",
	"Her direct line is [0161 234 5678 ext 21].",
	"Call me on [07700 123456]? No, on [07911 123456].",
	"reach me at [4482 9901] (home)",
}

// noPhoneSentences have numbers that are not phone numbers.
var noPhoneSentences = []string{
	"SSN 666-74-2104 was rejected.",
	"Order ORD-8555513230 has shipped.",
	"order number ORD-8555513230",
	"Invoice INV-4155550199 is overdue.",
	"Tracking 1Z999AA10123456784 in transit.",
	"Build 20240115.1234 passed.",
	"Version 10.2.3.4 is out.",
	"The meeting is on 2024-01-15 at 10:30.",
	"The total was 1,234,567.89 euros.",
	"ISBN 978-0-306-40615-7",
	"Case number 736 5012 was closed.",
	"Room 736 5012? No such room.",
	"Serial 4821-7730 registered.",
	"page 1234 5678 of the log",
	"between 2015 and 2019 revenue doubled",
	"call me on 555-0147",
	"Ticket case_4157360199 reopened.",
	"Port 8080 and 8443 are open.",
	"Coordinates 48.8566, 2.3522",
	"SKU 12345678 restocked.",
}

// unmark returns s without its [brackets] and the marked spans.
func unmark(s string) (string, [][2]int) {
	var b strings.Builder
	var spans [][2]int
	open := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			open = b.Len()
		case ']':
			spans = append(spans, [2]int{open, b.Len()})
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), spans
}

// measure scans each marked sentence and counts the marked spans found
// exactly by detector id, and the findings of id that are not marked.
func measure(t *testing.T, s *Scanner, id string, sentences []string) (hits, total, extra int) {
	t.Helper()
	for _, m := range sentences {
		text, spans := unmark(m)
		fs, err := s.ScanString(context.Background(), text)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		got := map[[2]int]bool{}
		for _, f := range fs {
			if f.Detector == id {
				got[[2]int{f.Start, f.End}] = true
			}
		}
		for _, sp := range spans {
			total++
			if got[sp] {
				hits++
				delete(got, sp)
			} else {
				t.Logf("missed %s %q in %q", id, text[sp[0]:sp[1]], text)
			}
		}
		for sp := range got {
			extra++
			t.Logf("unexpected %s %q in %q", id, text[sp[0]:sp[1]], text)
		}
	}
	return hits, total, extra
}

// fill puts the k-th value in the k-th template (templates cycle).
func fill(templates, values []string, mark string) []string {
	out := make([]string, len(values))
	for k, v := range values {
		out[k] = strings.Replace(templates[k%len(templates)], mark, "["+v+"]", 1)
	}
	return out
}

func TestQuality(t *testing.T) {
	t.Parallel()
	s, err := New(Options{HashKey: []byte("quality")})
	if err != nil {
		t.Fatal(err)
	}
	neg := func(xs []string) []string { return xs }
	cases := []struct {
		name      string
		id        string
		sentences []string
		min       int     // sentences needed for a measure
		recall    float64 // goal, or 0 for sentences that mark nothing
		maxExtra  int     // findings that are not marked
	}{
		{"full names", "pii.person_name", fill(fullNameTemplates, fullNames, "{N}"), 100, 0.85, 3},
		{"names alone after a cue", "pii.person_name", fill(aloneTemplates, aloneNames, "{G}"), 100, 0.60, 3},
		{"no names", "pii.person_name", neg(noNameSentences), 50, 0, 2},
		{"full names outside the lists", "pii.person_name", fill(fullNameTemplates, unlistedFullNames, "{N}"), 40, 0.75, 0},
		{"names alone outside the lists", "pii.person_name", fill(aloneTemplates, unlistedGivenNames, "{G}"), 40, 0.55, 0},
		{"phones", "pii.phone", phoneSentences, 60, 0.85, 2},
		{"no phones", "pii.phone", neg(noPhoneSentences), 20, 0, 0},
	}
	nameWords := nameWordMap()
	for _, n := range append(append([]string{}, unlistedFullNames...), unlistedGivenNames...) {
		for _, w := range strings.FieldsFunc(n, func(r rune) bool { return r == ' ' || r == '-' }) {
			if k := nameWords[strings.ToLower(w)]; k != nameNone {
				t.Fatalf("%q of %q is in the name lists (kind %d): the unlisted sets must hold none", w, n, k)
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.sentences) < c.min {
				t.Fatalf("%d sentences, want at least %d", len(c.sentences), c.min)
			}
			hits, total, extra := measure(t, s, c.id, c.sentences)
			if c.recall > 0 {
				r := float64(hits) / float64(total)
				t.Logf("%s: recall %.3f (%d/%d), %d unmarked findings in %d sentences", c.name, r, hits, total, extra, len(c.sentences))
				if r < c.recall {
					t.Errorf("%s: recall %.3f (%d/%d), goal %.2f", c.name, r, hits, total, c.recall)
				}
			} else {
				t.Logf("%s: %d findings in %d sentences", c.name, extra, len(c.sentences))
			}
			if extra > c.maxExtra {
				t.Errorf("%s: %d findings not marked, at most %d allowed", c.name, extra, c.maxExtra)
			}
		})
	}
}
