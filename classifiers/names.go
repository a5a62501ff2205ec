package classifiers

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Person names. A name is found from what surrounds it and from lists of
// common given names and surnames, never from a list of people:
//
//   - a courtesy or professional title followed by one to three capitalised
//     name words: "Dr Oliver Renaud", "Mme Delacroix", "Prof. J. van Dijk"
//     (the title is not part of the finding, so "Dr" stays readable);
//   - a common given name followed by one or two more capitalised name
//     words: "Amélie Fontaine", "Jean-Pierre K. Martin", "Ludwig van
//     Beethoven";
//   - a common given name right after a surname in capitals, as French
//     lists and forms write them: "DUPONT Jean"; a listed surname before a
//     given name: "Zhang Wei";
//   - a capitalised word followed by a common surname: "Ottoline Okonkwo";
//   - two capitalised name words after a form label and its colon, whatever
//     the given name: "Employee: Jordan Lee";
//   - two or three name words after a cue, a verb or role that takes a
//     person ("I spoke to X Y", "met with X Y", "my manager X Y", "signed
//     by X Y"), or before a verb only people take ("X Y said", "X Y, who");
//   - a name word alone after a strong cue: a greeting ("Dear X,", "Hi X",
//     "Bonjour X"), thanks ("Thanks, X"), "cc X", a signature ("Regards,\nX",
//     "— X"); a listed given name or surname alone after a request ("ask
//     X", "call X", "according to X"); a listed given name alone after
//     "to", "with", "by", "from" or "for".
//
// A doctorate's field between title and name is skipped ("Dr. med.
// Weber"). A name right after a street, school or place word is the
// place's ("rue Victor Hugo", "Lycée Marie Curie"), and the names forms use
// for nobody ("John Doe") are reserved examples (Options.IncludeReserved).
//
// A name word starts with an upper-case letter (ASCII or Latin-1/Latin
// Extended-A) and goes on with letters, joined by '-' or by an apostrophe
// before an upper-case letter (O'Brien). Words that end a name rather than
// continue it (articles, pronouns, weekdays, months, street and company
// words, offices and job titles, institutions, sentence-opening adverbs,
// teams, products, countries and large cities) are never name words, so
// "Hugo Street", "Victor Inc", "Monsieur le Directeur", "Sr. Manager",
// "Hi Team" and "the Christian Democratic Party" are not names; a title may
// follow a title ("Herr Doktor Müller", "Prof. Dr. Anna Schmidt"); given
// names and surnames that are also everyday English words (Will, May,
// Mark, Grace, Brown, Young) are not in the lists, so they need a title or
// a cue. A lone name word without a cue is not reported: it identifies no
// one.
//
// The value hashed is the name in lower case with single spaces, so the same
// name written with a title, without one, or in capitals has one hash.

// nameKind is what a capitalised word is to the name detector.
type nameKind uint8

const (
	nameNone    nameKind = iota
	nameGiven            // a common given name
	nameTitle            // a title that precedes a name
	nameStop             // a word that is never part of a name
	nameSurname          // a common surname
)

// titles precede a name (with or without a period). Lower case.
const nameTitles = `mr mrs ms miss mx dr prof sir dame lord lady rev m mme mlle mmes mlles monsieur madame mademoiselle pr
maître maitre herr frau dott sig sr sra srta dhr mevr insp judge professor professeur docteur doktor`

// nameStops are capitalised words that end a name (or cannot start one
// after a title). Lower case.
const nameStops = `the a an and or but nor of in on at to for from by with without into onto over under about after before
is was are were be been has had have will would can could should may might must shall do does did not no yes
i we you he she it they me us him her them this that these those our your his its their my mine
who what when where which why how all any each every some many most more other such only own same so than too very
dear hi hello hey thanks thank regards best cheers sincerely yours cordialement bonjour merci
le la les un une des du de et ou en au aux par pour sur dans avec sans chez il elle ils elles nous vous je
der die das den dem des ein eine und oder mit von zu im am el los las y con por para del al il lo gli
street st avenue ave road rd lane ln boulevard blvd bd drive dr court ct place pl square sq way highway hwy
rue allée allee chemin impasse quai cours route esplanade
park bridge station airport port hall tower house building centre center plaza mall market
bank group inc ltd llc llp plc sa sas sarl gmbh ag bv nv spa srl corp corporation company co holdings partners
university college school academy institute foundation hospital clinic ministry department agency office
council committee board team services solutions systems technologies labs research
monday tuesday wednesday thursday friday saturday sunday
january february march april june july august september october november december
lundi mardi mercredi jeudi vendredi samedi dimanche
jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
janvier février fevrier mars avril mai juin juillet août aout septembre octobre novembre décembre decembre
north south east west northern southern eastern western new old great saint sainte san santa
ceo cfo cto coo vp hr it pr qa api faq usa uk eu un nato ok re fw fwd cc bcc ps nb
iban bic swift siren siret nir ssn tlp rib urgent note nota objet subject ref confidential confidentiel secret draft
brouillon copie copy annexe total todo fixme warning attention important
president chairman chairwoman chairperson chair director minister mayor speaker secretary governor ambassador
commissioner chancellor senator rector sheriff captain colonel general sergeant officer manager engineer
developer analyst consultant executive assistant administrator software senior junior vice chief
président présidente directeur directrice ministre maire secrétaire gouverneur ambassadeur ambassadrice commissaire
préfet préfète procureur procureure juge bâtonnier greffier conseiller conseillère député députée sénateur sénatrice recteur
präsident direktor bürgermeister presidente director directora ministro ministra alcalde alcaldesa direttore sindaco
med sc phd msc bsc mba
party parti state laboratories laboratory laboratoire laboratoires falls democratic democrat republican union church
cathedral museum library stadium theatre theater fund trust capital ventures press times news journal prize award
river garden gardens line lines film films pictures studio studios records productions games jacket jackets gems
language programming island islands lake bay valley hill hills mountain mountains beach coast forest sea ocean
canyon creek springs lodge hotel hotels restaurant cafe café bar grill pizza kitchen bakery brasserie boutique
airlines airways motors cars foods wines spirits fashion cosmetics jewelry pharma labs festival show tour cup
yesterday today tomorrow tonight however meanwhile also then now later last next please finally recently sadly
luckily unfortunately fortunately instead perhaps maybe still yet even just only first second third again once since
until unless although though because while whereas if as here there thus hence therefore overall currently
initially eventually otherwise anyway besides furthermore moreover additionally nevertheless regardless indeed
actually basically generally usually often sometimes always never soon already good happy merry welcome
everyone everybody anyone someone nobody teams folks guys world sir madam customers member members client clients
user users colleague colleagues partner friend friends valued beaucoup tous toutes legal finance sales marketing
support security engineering accounts payable receivable payroll admin helpdesk service operations ops management
product products platform cloud google microsoft apple amazon meta facebook netflix oracle ibm intel nvidia openai
anthropic slack zoom github gitlab jira confluence salesforce sap adobe uber tesla twitter linkedin youtube whatsapp
siri alexa cortana windows linux android chrome firefox safari excel outlook gmail azure docker kubernetes python
java javascript america europe africa asia australia canada france germany spain italy china japan india brazil
mexico london paris berlin madrid rome tokyo dublin lyon york texas california amsterdam brussels zurich geneva
lisbon rotterdam frankfurt munich high low grand mount chancery customer go mundo monde welt mondo
unicode standard markdown code command protocol specification format edition version release
value values type types error errors string int bool true false nil null func return struct`

// nameGivens are common given names in the languages aishield's other
// detectors cover (English, French, German, Spanish, Italian, Dutch) and
// common in the same countries from elsewhere; written for this detector,
// lower case, with and without accents where both are usual. Names that are
// everyday English words or places (Will, May, Mark, Paris) are left out.
const nameGivens = `
james john robert michael william david richard joseph thomas charles christopher daniel matthew anthony donald
steven paul andrew joshua kenneth kevin brian george edward ronald timothy jason jeffrey ryan jacob gary nicholas
eric jonathan stephen larry justin scott brandon benjamin samuel gregory alexander patrick dennis jerry tyler
aaron henry douglas peter adam nathan zachary walter kyle harold carl arthur gerald roger keith jeremy terry
lawrence sean christian albert joe ethan jesse willie billy bryan bruce noah gabriel logan alan juan
roy ralph randy eugene vincent russell louis philip bobby johnny bradley oliver harry jack charlie oscar leo
alfie freddie archie theo isaac lucas mason liam elijah james aiden jayden owen luke dylan caleb connor
mary patricia jennifer linda elizabeth barbara susan jessica sarah karen lisa nancy betty margaret sandra ashley
kimberly emily donna michelle carol amanda dorothy melissa deborah stephanie rebecca sharon laura cynthia kathleen
amy angela shirley anna brenda pamela emma nicole helen samantha katherine christine debra rachel carolyn janet
catherine maria heather diane ruth julie olivia joyce victoria kelly lauren christina joan evelyn judith
megan andrea cheryl hannah jacqueline martha gloria teresa ann sara frances kathryn janice jean abigail
alice judy sophia denise marilyn danielle beverly isabella theresa diana natalie brittany charlotte marie
kayla alexis lori sophie chloe ella mia amelia isla ava emily poppy lily ellie freya evie jessica ruby
jean pierre michel philippe alain nicolas christophe patrick christian daniel laurent frédéric frederic
stéphane stephane sébastien sebastien julien david olivier éric thierry pascal françois francois bernard
jérôme jerome guillaume antoine mathieu matthieu romain maxime alexandre vincent thomas hugo lucas nathan
louis gabriel raphaël raphael arthur jules adam léo enzo théo theo baptiste clément clement quentin florian
bastien damien jérémy jeremy benoît benoit yannick cédric cedric fabien gilles didier serge rené rene andré andre
jacques gérard gerard marcel henri lucien émile emile étienne etienne xavier yves hervé herve loïc loic arnaud
aurélien aurelien valentin corentin kévin kevin mickaël mickael gaël gael gaetan gaëtan tristan mathis timothée
ulysse
marie nathalie isabelle sylvie catherine françoise francoise christine monique valérie valerie sandrine
véronique veronique sophie céline celine chantal nicole anne martine stéphanie stephanie julie sandra caroline
aurélie aurelie émilie emilie camille laura manon léa lea chloé chloe inès ines sarah jade louise alice lina
zoé zoe juliette lucie mathilde clara pauline marion amandine élodie elodie gaëlle gaelle amélie amelie
mélanie melanie audrey virginie claire hélène helene cécile cecile agnès agnes brigitte danielle ginette
josiane odile colette simone jeanne madeleine suzanne yvonne margaux noémie noemie océane oceane clémence
clemence charlotte léna lena elise élise eloïse eloise anaïs anais laetitia laëtitia solène solene
maximilian felix paul leon lukas jonas finn elias luca ben noah jan tim niklas moritz julian florian fabian
sebastian tobias stefan andreas markus matthias michael christoph wolfgang klaus jürgen jurgen dieter uwe
frank thorsten torsten sven jens dirk ralf bernd helmut horst günter gunter manfred heinz hans karl friedrich
ursula monika petra sabine renate karin brigitte gabriele ingrid andrea claudia susanne birgit katrin kerstin
anja nicole stefanie tanja heike silke jutta gisela helga hildegard greta lea leonie lena johanna hannah
mia emilia marlene luisa amelie frieda ida lotte mathilda
josé jose antonio manuel francisco juan javier carlos jesús jesus alejandro miguel rafael pedro pablo ángel
angel sergio fernando jorge luis alberto álvaro alvaro diego adrián adrian raúl raul enrique ramón ramon
vicente joaquín joaquin andrés andres iván ivan rubén ruben óscar oscar gonzalo mateo hugo martín
martin carmen pilar isabel dolores lucía lucia cristina marta elena rosa mercedes laura sofía sofia paula
beatriz raquel silvia patricia rocío rocio montserrat nuria teresa alba inmaculada concepción concepcion
giuseppe giovanni antonio mario luigi francesco angelo vincenzo pietro salvatore carlo franco domenico bruno
paolo michele giorgio aldo sergio luciano marco stefano andrea alessandro lorenzo matteo leonardo riccardo
davide simone federico gabriele emanuele tommaso edoardo filippo giacomo
giulia francesca chiara sara alessia martina federica valentina elisa silvia paola giovanna rosa anna
lucia angela teresa giuseppina maria antonella roberta daniela simona laura serena ilaria alessandra
jan pieter johannes hendrik cornelis willem gerrit jacobus dirk bram daan sem lars thijs ruben bas joost
sander wouter maarten jeroen niels koen stijn floris
anna emma julia sophie eva fleur lotte sanne femke anouk lieke iris noor tess saar maud
mohamed mohammed muhammad ahmed ali omar youssef yusuf karim farid rachid mehdi samir nabil hamza ibrahim
mustafa hassan hussein khalid tariq bilal amine yassine ayoub sofiane walid
fatima aïcha aicha karima khadija amina leila leïla nadia samira yasmine yasmina salma meriem nour sana rania
wei li ming jun hao xin yan hui jing lei chen hiroshi takeshi kenji yuki haruto sakura yui
raj rahul amit priya anjali deepak sanjay vikram arjun ananya neha pooja sunita
dmitri sergei alexei ivan nikolai olga natalia svetlana irina tatiana ekaterina anastasia
piotr krzysztof tomasz marek katarzyna agnieszka magdalena małgorzata malgorzata
lars anders erik magnus nils johan karin ingrid astrid sigrid freja søren soren
sean liam niamh aoife siobhan ciaran declan eoin padraig
`

// nameGivensMore are given names common in the countries aishield's users
// write from that the list above leaves out: African, Arabic, South and
// East Asian, Turkish, Persian, Slavic, Nordic, Greek, Portuguese, Hebrew,
// Hungarian and Czech names (written for this detector from the
// frequency tables national statistics offices publish; everyday English
// words left out, as above).
const nameGivensMore = `
chidi chinedu chiamaka chioma ngozi emeka ifeoma ifeanyi obinna uchenna nnamdi adaeze oluwaseun olumide babatunde
tunde ayodele folake funmilayo yetunde kehinde taiwo temitope bukola kwame kofi kwesi kojo akosua abena adwoa yaw
kwabena efua wanjiru wambui njeri otieno odhiambo achieng amara thandiwe thabo sipho bongani lerato nomvula themba
zanele ayanda aisha ayesha farida nour noor layla laila leyla hana dalia yasmin zainab mariam maryam huda faisal
hamid jamal rashid saif zaid ziad anwar amir amira rami fadi ghassan hadi majid aarav vivaan aditya ravi ramesh
suresh mahesh rajesh dinesh ganesh naresh mukesh manoj vijay ajay anil sunil kiran deepa deepika divya kavya
lakshmi meera nisha rekha sneha swati shreya aishwarya ishaan karthik krishna siddharth varun nikhil abhishek
akash harish prakash venkat srinivas farhan zara fahad usman xiaoming xiaoli xiaohong jie ying fang ling mei
jian qiang chao haoran zihan yuxuan yiming zhiwei aiko akira daiki haruka hina kaito kazuki keiko kenta makoto
naoki riku satoshi shota takumi yuna yuto minjun seoyeon jiwoo jiho jihoon jisoo minseo seojun doyun jiyeon eunji
hyejin taehyun linh minh thanh huong duc trang phuong quang hieu tuan mehmet ahmet hüseyin huseyin murat emre
burak cem elif zeynep ayşe ayse fatma emine esra selin büşra busra merve ebru hakan serkan onur ozan kerem
baris barış reza shirin dariush parisa arash babak farhad mahsa neda roya kian navid pawel paweł michal michał
marcin łukasz lukasz bartosz kamil jakub mateusz wojciech jacek grzegorz dariusz zbigniew ewa joanna justyna
karolina aleksandra dorota beata oksana olena yulia iryna vladimir andrei andrey sergey mikhail yuri igor oleg
pavel bogdan jovan dragan nikola marko milena jelena dragana vesna mikko aino juha jukka matti pekka timo antti
sanna liisa elina leena björn bjorn gunnar henrik ole olav kari annika malin linnea ebba nikos yannis giannis
dimitris kostas georgios eleni katerina ioanna despina joão joao tiago thiago rui duarte gonçalo goncalo
mariana leonor matilde rafaela camila fernanda gabriela larissa bruna noa yossi avi moshe yael tamar shira eitan
itai noam zsófia zsofia zoltán zoltan lászló laszlo istván istvan gábor gabor eszter katalin jiří jiri petr
tomáš jana tereza ciara saoirse orla cian oisín oisin ronan darragh conor tariq yusuf
`

// nameSurnames are common surnames of the same origins, from the
// frequency lists national statistics offices publish (written for this
// detector; surnames that are everyday English words, such as Brown,
// White, Young or Baker, are left out). After a capitalised word that is
// not a stop word, a surname makes a name: "Chidi Okonkwo", "Seoyeon
// Choi".
const nameSurnames = `
smith jones williams taylor davies evans roberts walker wright robinson thompson hughes edwards lewis harris
clarke clark jackson morris moore harrison phillips watson davis bennett griffiths mitchell richardson bailey
collins shaw murphy miller richards khan marshall anderson simpson ellis adams wilson foster johnson garcia
rodriguez martinez hernandez lopez gonzalez perez sanchez ramirez torres nguyen flores nelson rivera campbell
bernard dubois petit durand leroy moreau lefebvre bertrand roux fournier morel girard lefevre lefèvre mercier
dupont lambert bonnet legrand garnier faure rousseau guerin guérin muller roussel perrin morin gauthier
dumont fontaine chevalier masson boyer lemaire duval joly gautier roche meunier dufour blanchard barbier brun
dumas brunet schmitt leroux fernandez marchand
müller schmidt schneider fischer weber meyer wagner becker schulz hoffmann schäfer schafer koch bauer richter
schröder schroder neumann schwarz zimmermann krüger kruger hofmann hartmann lange werner schmitz krause meier
lehmann schmid schulze maier köhler kohler herrmann huber kaiser fuchs scholz möller moller weiß weiss schubert
vogel keller günther gunther berger winkler baumann franke albrecht schuster böhm bohm schumacher krämer kramer
vogt jäger jager seidel brandt haas schreiber dietrich ziegler kuhn kühn pohl bergmann voigt pfeiffer
garcía gonzález rodríguez fernández lópez martínez sánchez pérez gómez gomez jiménez jimenez ruiz hernández díaz
diaz moreno muñoz munoz álvarez alvarez romero alonso gutiérrez gutierrez navarro domínguez dominguez vázquez
vazquez ramos ramírez serrano molina morales suárez suarez ortega delgado castro ortiz rubio marín marin sanz
núñez nunez iglesias medina garrido cortés cortes castillo santos lozano guerrero cano prieto méndez mendez
cruz calvo gallego herrera márquez marquez peña pena cabrera vega fuentes carrasco reyes caballero aguilar
santana herrero montero hidalgo giménez gimenez ibáñez ibanez ferrer durán duran benítez benitez vargas
salazar rojas velasco castellanos
rossi russo ferrari esposito bianchi romano colombo ricci marino greco gallo conti costa giordano mancini rizzo
lombardi moretti barbieri santoro mariani rinaldi caruso ferrara galli martini leone gentile martinelli vitale
lombardo coppola marchetti parisi ferraro fabbri marini grasso valentini messina gatti pellegrini palumbo
farina rizzi monti cattaneo
jansen janssen visser smit meijer mulder bos hendriks dekker brouwer dijkstra smits bakker vries jong boer
groot dijk leeuwen
nowak kowalski kowalska wiśniewski wisniewski wiśniewska wójcik wojcik kowalczyk kamiński kaminski lewandowski
lewandowska zieliński zielinski szymański szymanski woźniak wozniak dąbrowski dabrowski kozłowski kozlowski
jankowski mazur kwiatkowski wojciechowski krawczyk kaczmarek piotrowski grabowski zając zajac pawłowski
pawlowski michalski wieczorek jabłoński jablonski wróbel wrobel majewski olszewski malinowski jaworski adamczyk
dudek nowicki pawlak górski gorski witkowski walczak sikora baran rutkowski michalak szewczyk ostrowski
tomaszewski pietrzak marciniak zalewski jakubowski jasiński jasinski zawadzki sadowski chmielewski czarnecki
sawicki sokołowski sokolowski
ivanov ivanova smirnov smirnova kuznetsov kuznetsova popov popova vasiliev petrov petrova sokolov sokolova
mikhailov novikov novikova fedorov morozov morozova volkov volkova alekseev lebedev lebedeva semenov egorov
pavlov pavlova kozlov kozlova stepanov nikolaev orlov orlova andreev makarov nikitin zakharov zaitsev
solovyov borisov yakovlev grigoriev romanov vorobyov sergeev kuzmin frolov dmitriev korolev gusev kiselev
maksimov polyakov sorokin vinogradov kovalev belov medvedev antonov tarasov zhukov baranov filippov
shevchenko kovalenko bondarenko tkachenko kravchenko kovalchuk oliynyk shevchuk polishchuk boyko melnyk lysenko
marchenko rudenko savchenko petrenko
okafor okonkwo okoro nwosu adeyemi adebayo balogun bakare ogunleye adewale afolabi olawale okeke chukwu
abubakar bello danjuma mensah boateng asante owusu osei appiah agyeman darko amoah acheampong ofori addo kamau
odhiambo wanjiku mwangi kariuki njoroge ochieng omondi mutua kiprop cheruiyot ndlovu dlamini nkosi khumalo
mokoena mahlangu sithole
sharma verma gupta singh kumar patel shah mehta iyer iyengar nair menon pillai reddy rao naidu chowdhury
choudhury banerjee chatterjee mukherjee bose dutta ghosh kulkarni deshpande joshi patil agarwal aggarwal bansal
malhotra kapoor khanna chopra bhatia arora sethi ahuja saxena srivastava mishra tiwari pandey dubey tripathi
yadav thakur chauhan rajput raman krishnan subramanian venkatesh ramachandran natarajan sundaram bhat hegde
shetty kamath desai trivedi parikh qureshi siddiqui ansari sheikh akhtar chaudhry javed hossain alam miah begum
uddin
wang zhang liu chen yang huang zhao zhou xu zhu guo luo zheng liang xie deng cao peng zeng xiao tian dong yuan
cai jiang cheng ren shen yao cui zhong liao jia xia zou xiong qin qiu hou xue wong cheung leung lau yip chow
tsang kwok
sato suzuki takahashi tanaka watanabe ito yamamoto nakamura kobayashi kato yoshida yamada sasaki yamaguchi
matsumoto inoue kimura hayashi shimizu yamazaki ikeda hashimoto yamashita ishikawa nakajima maeda fujita ogawa
goto okada hasegawa murakami kondo ishii saito sakamoto endo aoki fujii nishimura fukuda miura fujiwara okamoto
matsuda nakagawa nakano harada tamura takeuchi kaneko wada nakayama ishida ueda morita shibata sakai kudo
yokoyama miyazaki miyamoto
kim choi jung jeong kang cho yoon jang lim seo shin kwon hwang ahn jeon hong moon bae baek heo yoo ryu
pham tran hoang huynh phan dang bui ngo duong
haddad nasser khoury mansour abdullah saleh salem khalil hamdan jaber darwish awad najjar sabbagh aziz
hakimi amrani bennani alaoui idrissi tazi berrada belkacem bouzid benjelloun cherkaoui mahmoud abbas qasim
yılmaz yilmaz kaya demir şahin sahin çelik celik yıldız yildiz yıldırım yildirim öztürk ozturk aydın aydin
özdemir ozdemir arslan doğan dogan kılıç kilic aslan çetin cetin koç koc özkan ozkan şimşek simsek polat
erdoğan erdogan
ahmadi hosseini mohammadi rezaei moradi karimi jafari rahimi hashemi mousavi tehrani kazemi sadeghi ghasemi
heidari
papadopoulos papadakis georgiou nikolaou christodoulou ioannou papageorgiou konstantinou dimitriou vasileiou
oikonomou makris antoniou
silva oliveira souza sousa rodrigues ferreira alves pereira lima gomes ribeiro martins carvalho almeida lopes
soares fernandes vieira barbosa rocha dias nascimento andrade moreira nunes marques machado mendes freitas
cardoso gonçalves goncalves teixeira araújo araujo pinto correia cavalcanti monteiro moura
johansson andersson karlsson nilsson eriksson larsson olsson persson svensson gustafsson pettersson jonsson
hansson bengtsson hansen johansen olsen larsen andersen pedersen nielsen kristiansen jensen halvorsen haugen
hagen virtanen korhonen mäkinen makinen nieminen mäkelä makela hämäläinen hamalainen laine heikkinen koskinen
järvinen jarvinen lehtonen lehtinen saarinen salminen heinonen niemi
o'sullivan walsh o'brien byrne o'connor o'neill o'reilly doyle mccarthy gallagher o'doherty kennedy lynch murray
quinn connolly daly o'connell dunne brennan burke johnston fitzgerald maguire nolan flynn o'callaghan o'donnell
duffy mahony boyle healy o'shea sweeney kavanagh mcgrath moran brady casey foley fitzpatrick o'leary mcdonald
macdonald mackenzie robertson macleod
cohen levi levy mizrahi peretz biton dahan friedman katz azoulay
nagy kovács kovacs tóth toth szabó szabo horváth horvath varga molnár molnar németh nemeth farkas balogh novák
novak svoboda svobodová svobodova novotný novotny novotná novotna dvořák dvorak dvořáková černý cerny procházka
prochazka kučera kucera veselý vesely horák horak
bautista ocampo mendoza villanueva aquino mercado
popescu ionescu dumitru stoica gheorghe ciobanu
`

// nameWordMap returns the name words: a capitalised word in lower case to
// its kind.
//
// The scan reads the name detector's word maps as wordTables and filters
// laid out at build time in tables_gen.go (TestTablesGenerated writes and
// checks it): nameWordTable and nameFilter of nameWordMap; nameFieldTable,
// nameLabelTable, nameCueTable, nameClosingTable, nameVerbTable,
// nameParticleTable, namePlaceTable and reservedNameTable of nameFields,
// nameLabels, nameCueMap, nameClosings, nameVerbs, nameParticles,
// namePlaces and reservedNames; nameCueBloom, nameStrongBloom,
// nameVerbBloom and nameLabelBloom of nameCueMap, nameStrongCues,
// nameVerbs and nameLabels.
func nameWordMap() map[string]nameKind {
	m := map[string]nameKind{}
	for _, w := range strings.Fields(nameStops) {
		m[w] = nameStop
	}
	for _, w := range strings.Fields(nameGivens + nameGivensMore) {
		if m[w] == nameNone {
			m[w] = nameGiven
		}
	}
	for _, w := range strings.Fields(nameSurnames) {
		if m[w] == nameNone {
			m[w] = nameSurname
		}
	}
	for _, w := range strings.Fields(nameTitles) {
		m[w] = nameTitle
	}
	return m
}

// nameFilterOf returns the filter of the name words: bit nameKey(w) set
// for every ASCII given name, surname and title w. A capitalised word
// whose bit is clear is passed over without being read or looked up,
// unless nameMaybe says it may still start a name (some 2,000 words set
// about 3% of the bits, so about 3% of other words are read in vain).
func nameFilterOf(words map[string]nameKind) (t [1 << 10]uint64) {
	var pad [24]byte
	for w, k := range words {
		if k != nameGiven && k != nameTitle && k != nameSurname {
			continue
		}
		ascii := true
		for i := 0; i < len(w); i++ {
			ascii = ascii && isAlpha(w[i])
		}
		if !ascii {
			continue
		}
		copy(pad[:], w)
		pad[len(w)] = ' '
		if h, end := nameKey(pad[:], 0); end == len(w) {
			t[h>>6] |= 1 << (h & 63)
		}
	}
	return t
}

// nameKey returns a 16-bit hash of the ASCII letters (either case) that
// start text[i:], read sixteen bytes at a time, and where they end; a
// run of sixteen letters or more is longer than any given name or title
// and ends at i+16 with hash 0 (whose filter bit is never set). text must
// have 16 bytes from i.
func nameKey(text []byte, i int) (uint32, int) {
	const ones, fold = 0x0101010101010101, 0x2020202020202020
	x := binary.LittleEndian.Uint64(text[i:]) | fold
	nl := ^((x + (0x80-'a')*ones) &^ (x + (0x7f-'z')*ones) &^ x) & (0x80 * ones) // bytes that are not letters
	if nl != 0 {
		k := bits.TrailingZeros64(nl) >> 3
		return uint32((x&(1<<(8*k)-1))*0x9E3779B97F4A7C15>>48) | 1, i + k
	}
	x2 := binary.LittleEndian.Uint64(text[i+8:]) | fold
	nl2 := ^((x2 + (0x80-'a')*ones) &^ (x2 + (0x7f-'z')*ones) &^ x2) & (0x80 * ones)
	if nl2 == 0 {
		return 0, i + 16
	}
	k := bits.TrailingZeros64(nl2) >> 3
	return uint32((x*0x9E3779B97F4A7C15^(x2&(1<<(8*k)-1))*0xC2B2AE3D27D4EB4F)>>48) | 1, i + 8 + k
}

// nameParticles join a given name to a surname in lower case ("van",
// "de", "d'" is handled by the word reader).
var nameParticles = map[string]bool{"van": true, "von": true, "de": true, "der": true, "den": true, "da": true, "di": true,
	"del": true, "della": true, "du": true, "des": true, "la": true, "le": true, "ter": true, "ten": true, "bin": true,
	"ibn": true, "al": true, "el": true, "dos": true, "das": true, "y": true}

// nameLabels raise a name's confidence when one lies whole within 24
// bytes before it ("Patient: John Smith", "Dear Amélie Fontaine"). They
// are looked for only around a name found, not by the keyword pass: words
// such as "name" and "client" are everywhere in prose. Lower case.
var nameLabels = map[string]bool{"name": true, "nom": true, "patient": true, "employee": true, "salarié": true,
	"client": true, "customer": true, "signed": true, "signé": true, "attn": true, "dear": true, "cher": true,
	"chère": true, "born": true, "née": true, "contact": true, "tenant": true, "applicant": true, "candidat": true,
	"candidate": true, "witness": true}

// nameFields are form labels that say the next words are a person's name
// ("Employee: Jordan Lee", "Nom complet : Ombeline Vasseur"): after one of
// them and its colon, two capitalised name words are a name even when the
// first is not in the given-name list. Lower case.
var nameFields = map[string]bool{"name": true, "full name": true, "nom": true, "nom complet": true, "patient": true,
	"employee": true, "salarié": true, "salariée": true, "candidate": true, "candidat": true, "candidate name": true,
	"applicant": true, "tenant": true, "locataire": true, "witness": true, "témoin": true, "attn": true,
	"signed": true, "signé": true, "signée": true, "signed by": true, "signé par": true, "author": true, "auteur": true,
	"customer": true, "customer name": true, "contact": true, "contact name": true, "beneficiary": true, "bénéficiaire": true}

// afterNameField reports whether text[i] follows a nameFields label and
// its colon ("Employee: ", "Nom : "), case-insensitively.
func afterNameField(text []byte, i int) bool {
	j := i
	for k := 0; k < 2 && j > 0 && (text[j-1] == ' ' || text[j-1] == '\t'); k++ {
		j--
	}
	if j == 0 || text[j-1] != ':' {
		return false
	}
	j--
	if j > 0 && text[j-1] == ' ' {
		j-- // "Nom : "
	}
	// The label is the last word before the colon, or the last two.
	k := lettersBefore(text, j, 16)
	if k == j {
		return false
	}
	var buf [40]byte
	if nameFieldTable.at(lowerName(buf[:0], text[k:j])) {
		return true
	}
	if k >= 2 && text[k-1] == ' ' {
		if k2 := lettersBefore(text, k-1, 16); k2 < k-1 {
			return nameFieldTable.at(lowerName(buf[:0], text[k2:j]))
		}
	}
	return false
}

// nameLetter reports a byte of a word for the name detector's backward
// readers: an ASCII letter or a byte of a multi-byte character.
func nameLetter(b byte) bool { return isAlpha(b) || b >= utf8.RuneSelf }

// lettersBefore returns where the run of nameLetter bytes that ends at
// text[end] starts, reading back at most limit bytes (end when there is
// none).
func lettersBefore(text []byte, end, limit int) int {
	k := end
	for k > 0 && end-k < limit && nameLetter(text[k-1]) {
		k--
	}
	return k
}

func nameDetector() *detector {
	return &detector{id: "pii.person_name", cat: CategoryPII,
		desc: "Person name: a title followed by capitalised name words (Dr, Mme, Herr...), a common given name with a surname (after it, or before it in capitals), a common surname after a name word, two name words after a form label (Employee:, Nom :), after a cue (ask, spoke to, met with, my manager) or before a verb only people take (said, wrote); a name alone after a greeting, thanks, cc or a signature (Dear Tomasz, Thanks Hugo, a closing line then Ana), or a listed name after a request (ask Maria)",
		mask: maskName}
}

// nameLabelBefore reports whether a word of nameLabels lies whole within
// the 24 bytes before text[start] (ASCII case-insensitive).
func nameLabelBefore(text []byte, start int) bool {
	lo := max(0, start-24)
	win := text[lo:start]
	for k := 0; k < len(win); {
		if !nameLetter(win[k]) {
			k++
			continue
		}
		e := k
		for e < len(win) && nameLetter(win[e]) {
			e++
		}
		if (k > 0 || lo == 0 || !nameLetter(text[lo-1])) && nameLabelBloom.has(win[k:e]) {
			var buf [24]byte
			if nameLabelTable.at(asciiLowerBytes(buf[:0], win[k:e])) {
				return true
			}
		}
		k = e
	}
	return false
}

// maskName shows each word's first letter: "O. R." for "Oliver Renaud".
func maskName(dst, v []byte) []byte {
	start := true
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == ' ':
			start = true
		case start:
			if c >= 0x80 {
				dst = append(dst, '*')
			} else {
				dst = append(dst, c)
			}
			dst = append(dst, '.', ' ')
			start = false
		}
	}
	if n := len(dst); n > 0 && dst[n-1] == ' ' {
		dst = dst[:n-1]
	}
	return dst
}

// nameStartMask has the high bit set in each byte of x (little-endian:
// byte 0 is the lowest) that may start a capitalised word: 'A'..'Z' not
// followed by another ('A'..'Z' in the last byte is kept: its successor
// is not in x), or 0xC3..0xC5 (the lead bytes of Latin-1 and Latin
// Extended-A letters), not following an ASCII letter or digit (prev: the
// high bit set when the byte before x is one). Words in capitals (IBAN,
// CONFIDENTIAL) do not start names; a name in capitals is found after a
// title ("M. RENAUD"). Upper-case letters inside words (base64, identifiers,
// acronyms) are passed over eight bytes at a time. Ranges are tested on
// the low seven bits with SWAR additions that cannot carry into the next
// byte. Small enough to be inlined.
func nameStartMask(x, prev uint64) uint64 {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	y := x &^ high
	f := y | 0x20*ones // ASCII letters folded to lower case
	word := ((f+(0x80-'a')*ones)&^(f+(0x7f-'z')*ones) | (y+(0x80-'0')*ones)&^(y+(0x7f-'9')*ones)) &^ x
	upper := (y + (0x80-'A')*ones) &^ (y + (0x7f-'Z')*ones) &^ x & high
	lead := (y + (0x80-0x43)*ones) &^ (y + (0x7f-0x45)*ones) & x
	return (upper&^(upper>>8) | lead) &^ (word<<8 | prev) & high
}

// nameWord is a word read by readNameWord.
type nameWord struct {
	start, end int
	upper      bool     // starts with an upper-case letter
	allUpper   bool     // every letter upper case (RENAUD)
	initial    bool     // a single upper-case letter followed by '.' (end includes it)
	k          nameKind // its kind, when namePart returned it (nameNone otherwise)
}

// letterAt returns the length of the letter at text[i] (1 or 2 bytes, 0 if
// none) and whether it is upper case. Letters are ASCII and the Latin-1 and
// Latin Extended-A blocks (U+00C0..U+017F without × and ÷).
func letterAt(text []byte, i int) (int, bool) {
	c := text[i]
	if c < 0x80 {
		if isAlpha(c) {
			return 1, isUpper(c)
		}
		return 0, false
	}
	if i+1 >= len(text) || text[i+1]&0xC0 != 0x80 {
		return 0, false
	}
	c2 := text[i+1]
	switch c {
	case 0xC3:
		if c2 == 0x97 || c2 == 0xB7 {
			return 0, false
		}
		return 2, c2 < 0xA0
	case 0xC4, 0xC5:
		// Latin Extended-A alternates upper (even) and lower (odd) case
		// for most of the block.
		cp := (rune(c&0x1F) << 6) | rune(c2&0x3F)
		up := cp%2 == 0
		if (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E) {
			up = cp%2 == 1
		}
		return 2, up
	}
	return 0, false
}

// readNameWord reads the word starting at text[i] (which must not follow
// a letter or digit). ok is false if it is not a word of letters.
func readNameWord(text []byte, i int) (w nameWord, ok bool) {
	n, up := letterAt(text, i)
	if n == 0 {
		return w, false
	}
	w = nameWord{start: i, upper: up, allUpper: up}
	j := i + n
	letters := 1
	for j < len(text) && j-i <= 40 {
		if m, u := letterAt(text, j); m > 0 {
			w.allUpper = w.allUpper && u
			letters++
			j += m
			continue
		}
		c := text[j]
		if c == '-' && j+1 < len(text) {
			if m, u := letterAt(text, j+1); m > 0 && u == w.upper {
				j++
				continue
			}
		}
		if c == '\'' && j+1 < len(text) {
			if m, u := letterAt(text, j+1); m > 0 && u {
				j++
				continue
			}
		}
		if c == 0xE2 && j+3 < len(text) && text[j+1] == 0x80 && text[j+2] == 0x99 { // ’ (U+2019)
			if m, u := letterAt(text, j+3); m > 0 && u {
				j += 3
				continue
			}
		}
		break
	}
	if j-i > 40 || (j < len(text) && (isDigit(text[j]) || text[j] == '_' || text[j] >= utf8.RuneSelf && letterRune(text[j:]))) {
		return w, false
	}
	w.end = j
	if letters == 1 {
		w.allUpper = false
		if up && j < len(text) && text[j] == '.' {
			w.initial = true
			w.end = j + 1
		}
	}
	return w, true
}

// letterRune reports whether b starts with a letter or digit of any script
// (a name word glued to one is not a name word).
func letterRune(b []byte) bool {
	r, _ := utf8.DecodeRune(b)
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// kind looks a word up in nameWordTable (lower-cased; a hyphenated given name
// is a given name when its first part is: Jean-Pierre, Anne-Sophie).
func (w nameWord) kind(text []byte, buf *[48]byte) nameKind {
	low := lowerName(buf[:0], text[w.start:w.end])
	k := nameWordTable.at(low)
	if k == nameNone {
		if h := strings.IndexByte(string(low), '-'); h > 0 {
			if nameWordTable.at(low[:h]) == nameGiven {
				return nameGiven
			}
		}
	}
	return k
}

// lowerName lower-cases ASCII and Latin-1 upper-case letters and drops a
// trailing period.
func lowerName(dst, v []byte) []byte {
	// Each byte maps to one byte: the result is written in place.
	d := len(dst)
	dst = slices.Grow(dst, len(v))[:d+len(v)]
	out := dst[d:]
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isUpper(c):
			c += 0x20
		case c == 0xC3 && i+1 < len(v) && v[i+1] >= 0x80 && v[i+1] < 0x9F && v[i+1] != 0x97:
			out[i], out[i+1] = c, v[i+1]+0x20
			i++
			continue
		}
		out[i] = c
	}
	if n := len(dst); n > 0 && dst[n-1] == '.' {
		dst = dst[:n-1]
	}
	return dst
}

// wordStart reports whether text[i] starts a word: it does not follow a
// letter, digit, '_' or the continuation of a multi-byte character.
func wordStart(text []byte, i int) bool {
	if i == 0 {
		return true
	}
	p := text[i-1]
	if p >= utf8.RuneSelf {
		r, _ := utf8.DecodeLastRune(text[:i])
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}
	return !isWordByte(p) && p != '\'' && p != '-' && p != '@' && p != '.' && p != '/'
}

// nameSep returns the offset of the next word after a separator of one or
// two spaces or tabs (or a no-break space) at text[i], or -1.
func nameSep(text []byte, i int) int {
	j := i
	for j < len(text) && j-i < 3 {
		switch {
		case text[j] == ' ' || text[j] == '\t':
			j++
			continue
		case text[j] == 0xC2 && j+1 < len(text) && text[j+1] == 0xA0:
			j += 2
			continue
		}
		break
	}
	if j == i || j-i > 2 || j >= len(text) {
		return -1
	}
	return j
}

// nameAt looks for a person name starting at text[i], an ASCII capital or
// a 0xC3..0xC5 lead byte (anchors calls it for no other), and returns
// where anchors goes on (see the comment at the top of the file).
func (st *scanState) nameAt(i int) int {
	text := st.text
	n := len(text)
	c := text[i]
	if i+1 < n && (isUpper(c) && isUpper(text[i+1]) || c == 0xC3 && text[i+1] >= 0xA0) || !wordStart(text, i) {
		return i + 1
	}
	if isUpper(c) && i+16 <= n {
		// An ASCII word ending in a plain byte is read and looked up
		// only if its bit in nameFilter is set.
		h, j := nameKey(text, i)
		if h == 0 {
			return j // longer than any given name or title
		}
		if e := text[j]; e < utf8.RuneSelf && e != '-' && e != '\'' {
			if isDigit(e) || e == '_' || nameFilter[h>>6]&(1<<(h&63)) == 0 && !afterNameField(text, i) && !nameMaybe(text, i, j) {
				return j
			}
		}
	}
	w, ok := readNameWord(text, i)
	if !ok || !w.upper {
		return max(i+1, w.end)
	}
	var buf [48]byte
	switch k := w.kind(text, &buf); {
	case k == nameTitle:
		return st.nameAfterTitle(st.s.names, w, &buf)
	case k == nameGiven, k == nameNone && afterNameField(text, i):
		return st.nameFromGiven(st.s.names, w, &buf)
	case k == nameNone, k == nameSurname:
		return st.nameFromContext(st.s.names, w, k, &buf)
	}
	return w.end
}

// nameMaybe reports whether the capitalised ASCII word text[i:j], which is
// neither a given name, a surname nor a title, may still start a name:
// another capitalised word follows it, or a strong cue precedes it.
func nameMaybe(text []byte, i, j int) bool {
	if !(text[j] == ' ' && j+1 < len(text) && (isUpper(text[j+1]) || text[j+1] >= 0xC3 && text[j+1] <= 0xC5)) {
		return mayStrongCue(text, i) && nameCueBefore(text, i) == cueStrong
	}
	// Two capitalised words ("Quarterly Review", "Chidi Okonkwo"): a
	// name if the second may be a surname (its nameFilter bit is set), or
	// if a cue precedes them or a verb only people take follows them
	// (nameFromContext decides).
	k := j + 1
	if !isUpper(text[k]) || k+16 > len(text) {
		return true
	}
	h, e := nameKey(text, k)
	if h == 0 || nameFilter[h>>6]&(1<<(h&63)) != 0 || text[e] >= utf8.RuneSelf || text[e] == '-' || text[e] == '\'' {
		return true
	}
	if nameCueBefore(text, i) >= cueWeak || personAfter(text, e) {
		return true
	}
	// A third word: "Ana Lima Costa said".
	if text[e] == ' ' && e+17 <= len(text) && isUpper(text[e+1]) {
		if h3, e3 := nameKey(text, e+1); h3 != 0 && personAfter(text, e3) {
			return true
		}
	}
	return false
}

// nameCue is how strongly the words before a capitalised word say that a
// person's name follows.
type nameCue uint8

const (
	cueNone     nameCue = iota
	cueGiven            // "to", "with", "from", "for", "by": a listed given name alone
	cueWeak             // a verb or role that takes a person: a given name or surname alone, or two name words
	cueStrong           // a greeting, a thanks, "cc", a signature: any name word alone
	cuePrev             // (nameCueMap only) a preposition: look at the word before it too
	cueRole             // (nameCueMap only) a role noun in lower case: weak, also before a comma ("the tenant, Jo Lee")
	cueGreeting         // (nameCueMap only) a greeting: strong when capitalised ("Hi Ana", not "lo, hi Reg")
	cueCopy             // (nameCueMap only) "cc", "bcc": weak, also before a colon ("Cc: Ana Lima"; "CC" is also a compiler)
)

// nameCueMap returns the words (and two-word phrases, for the prepositions
// marked cuePrev) that say a person's name follows, in English, French,
// German, Spanish and Italian. Lower case.
func nameCueMap() map[string]nameCue {
	m := map[string]nameCue{}
	add := func(c nameCue, words string) {
		for _, w := range strings.Split(words, ",") {
			if w = strings.TrimSpace(w); w != "" {
				m[w] = c
			}
		}
	}
	add(cueGreeting, `dear, dearest, hi, hello, hey, hiya, bonjour, bonsoir, salut, coucou, cher, chère, chers, chères,
		hola, ciao, hallo, hej, liebe, lieber, querida, querido, cara, caro, good morning, good afternoon, good evening`)
	add(cueStrong, `thanks, thx, merci, gracias, grazie, danke, thank you, many thanks`)
	add(cueCopy, `cc, bcc`)
	add(cueWeak, `ask, asked, asking, tell, told, remind, reminded, ping, pinged, email, emailed, messaged,
		texted, call, invite, invited, meet, met, hire, hired, interviewed, recommended, recommend, welcome,
		welcomed, thank, thanked, congratulate, congrats, owe, introduce, introduced, selon, demande, demandez,
		demander, appelle, appelez, appeler, contacte, contactez, contacter, rencontré, remercie, remercier,
		according to, spoke to, speak to, talk to, talked to, talking to, sent to, send to, forward to, forwarded to,
		reply to, replied to, assigned to, belongs to, thanks to, went to, gave to, given to,
		met with, meet with, meeting with, spoke with, speak with, talk with, talked with, chat with, chatted with,
		check with, checked with, sync with, call with, lunch with, dinner with, coffee with, interview with,
		appointment with, working with, worked with, work with,
		signed by, written by, given by, taken by, approved by, sent by, presented by, reviewed by, led by,
		prepared by, submitted by, reported by, authored by, edited by, translated by, founded by, hosted by,
		chaired by, requested by, raised by, interviewed by, painted by, owned by, assigned by,
		letter from, message from, email from, call from, note from, complaint from, request from, feedback from,
		reply from, response from, visit from, help from, booked for, reserved for,
		demande à, parlé à, écrit à, envoyé à, transmis à, réunion avec, rencontre avec, parlé avec, voir avec,
		vu avec, déjeuner avec`)
	add(cuePrev, `to, with, by, from, for, à, avec, you, morning, afternoon, evening`)
	add(cueRole, `manager, accountant, neighbour, neighbor, colleague, coworker, boss, friend, wife, husband, partner,
		son, daughter, brother, sister, mother, father, mom, mum, dad, uncle, aunt, cousin, lawyer, attorney,
		doctor, nurse, dentist, teacher, student, customer, client, tenant, landlord, landlady, patient, employee,
		contractor, candidate, recruiter, lead, intern, assistant, secretary, author, founder, supervisor, mentor,
		coach, therapist, pharmacist, surgeon, consultant, roommate, flatmate, fiancé, fiancée, girlfriend,
		boyfriend, grandmother, grandfather, niece, nephew, collègue, voisin, voisine, ami, amie, médecin, avocat,
		avocate, cliente, patiente, locataire, mari, femme, fils, fille, frère, soeur, sœur, mère, père`)
	return m
}

// wordBloom is a 4096-bit filter of the words of a map (for a phrase, its
// last word) keyed by their length and their first and last bytes, lower
// case: a word whose bit is clear is not looked up in the map.
type wordBloom [64]uint64

// bloomKey is w's bit in a wordBloom; w holds ASCII-folded bytes (a
// multi-byte letter's bytes as they are: "chère" and "CHÈRE" differ, and
// wordBloom holds both).
func bloomKey(n int, first, last byte) uint32 {
	return (uint32(n)*0x9E3779B1 ^ uint32(first|0x20)*0x85EBCA77 ^ uint32(last|0x20)*0xC2B2AE3D) >> 20
}

func newWordBloom[V any](ws map[string]V) *wordBloom {
	var t wordBloom
	for w := range ws {
		if sp := strings.LastIndexByte(w, ' '); sp >= 0 {
			w = w[sp+1:]
		}
		for _, v := range []string{w, strings.ToUpper(w)} {
			h := bloomKey(len(v), v[0], v[len(v)-1])
			t[h>>6] |= 1 << (h & 63)
		}
	}
	return &t
}

// has reports whether w may be a word of the map.
func (t *wordBloom) has(w []byte) bool {
	h := bloomKey(len(w), w[0], w[len(w)-1])
	return t[h>>6]&(1<<(h&63)) != 0
}

// nameStrongCues returns the strong cues and greetings of cues.
func nameStrongCues(cues map[string]nameCue) map[string]nameCue {
	m := map[string]nameCue{}
	for w, c := range cues {
		if c == cueStrong || c == cueGreeting {
			m[w] = c
		}
	}
	return m
}

// mayStrongCue is a quick test before nameCueBefore(text, i) ==
// cueStrong: false when the word before text[i] cannot end a strong cue.
func mayStrongCue(text []byte, i int) bool {
	if i < 2 {
		return false
	}
	switch text[i-1] {
	case '\n':
		return true
	case ' ':
	default:
		return false
	}
	j := i - 1
	switch p := text[j-1]; {
	case p == ',' || p == ':' || p == '-' || p >= utf8.RuneSelf:
		return true // after punctuation or a dash: nameCueBefore decides
	}
	k := lettersBefore(text, j, 16)
	return k < j && nameStrongBloom.has(text[k:j])
}

// nameClosings end the line before a signature ("Best regards,\nAnna").
// Lower case: the last word before the comma.
var nameClosings = map[string]bool{"regards": true, "best": true, "cheers": true, "thanks": true, "sincerely": true,
	"yours": true, "cordialement": true, "wishes": true, "saludos": true, "saluti": true, "grüße": true, "grüßen": true,
	"respectfully": true, "truly": true, "amitiés": true, "bises": true, "merci": true, "gracias": true, "grazie": true,
	"danke": true, "you": true, "care": true, "soon": true, "salutations": true, "atentamente": true}

// nameCueBefore returns the cue that ends right before the word at
// text[i]: a cue word and one space, a strong cue and a comma ("Thanks,
// Hugo"), a role noun and a comma, a dash at the start of a line ("— Ana"),
// or a closing line ("Kind regards,") and a line break.
func nameCueBefore(text []byte, i int) nameCue {
	j := i
	if j == 0 {
		return cueNone
	}
	switch text[j-1] {
	case '\n':
		return nameSignature(text, j-1)
	case ' ':
		j--
	default:
		return cueNone
	}
	// A dash that starts a line signs what follows when the name ends
	// the line: "— Ana", "-- Ana Lima" (not a txtar file marker "-- a.go --").
	switch {
	case j >= 2 && text[j-1] == '-' && text[j-2] == '-':
		return min(lineStartCue(text, j-2), signatureRest(text, i))
	case j >= 3 && text[j-3] == 0xE2 && text[j-2] == 0x80 && (text[j-1] == 0x94 || text[j-1] == 0x93):
		return min(lineStartCue(text, j-3), signatureRest(text, i))
	}
	var punct byte // a comma or colon between the cue and the name
	if j > 0 && (text[j-1] == ',' || text[j-1] == ':') {
		punct = text[j-1]
		j--
	}
	k := lettersBefore(text, j, 16)
	if k == j || k > 0 && !cueBoundary(text[k-1]) {
		return cueNone
	}
	if !nameCueBloom.has(text[k:j]) {
		return cueNone
	}
	var buf [40]byte
	c := nameCueTable.at(lowerName(buf[:0], text[k:j]))
	ps := k // where the cue phrase starts
	if c == cuePrev {
		c = cueGiven
		if k >= 2 && text[k-1] == ' ' {
			if k0 := lettersBefore(text, k-1, 16); k0 < k-1 && (k0 == 0 || !nameLetter(text[k0-1])) {
				if c2 := nameCueTable.at(lowerName(buf[:0], text[k0:j])); c2 != cueNone {
					c, ps = c2, k0
				}
			}
		}
	}
	switch {
	case c == cueGreeting:
		if !isUpper(text[ps]) && !(text[ps] == 0xC3 && ps+1 < len(text) && text[ps+1] < 0xA0) {
			return cueNone
		}
		c = cueStrong
	case c == cueRole && (punct == ':' || isUpper(text[k])):
		return cueNone // a form label and its colon are afterNameField's; "Supervisor Memory-Management" is a heading
	case c == cueRole:
		return cueWeak
	case c == cueCopy:
		return cueWeak
	case punct != 0 && c != cueStrong:
		return cueNone
	case c == cueWeak && (isUpper(text[ps]) || text[ps] == 0xC3) && !sentenceStart(text, ps):
		return cueNone // a capitalised verb inside a title: "Message Authentication Code", "System Call Vectored"
	}
	return c
}

// sentenceStart reports whether text[i] starts a line or a sentence.
func sentenceStart(text []byte, i int) bool {
	for i > 0 && (text[i-1] == ' ' || text[i-1] == '\t') {
		i--
	}
	if i == 0 {
		return true
	}
	switch text[i-1] {
	case '\n', '\r', '.', '!', '?', '"', '(', '>', ':', ';':
		return true
	}
	return false
}

// cueBoundary reports whether b may precede a cue word: white space, an
// opening bracket or quote, or a multi-byte character's last byte (“, «),
// but not a letter, a digit or code punctuation ($hi, \thanks, a_hi).
func cueBoundary(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\r', '(', '"', '\'', '>', '*':
		return true
	}
	return b >= 0x80 && b < 0xC0
}

// signatureRest returns cueStrong when the line from text[i] to its end
// (at most 48 bytes) holds only a name: letters, spaces, apostrophes,
// hyphens inside words, a comma and what follows it ("— Ana Lima, Sales").
func signatureRest(text []byte, i int) nameCue {
	for k := i; k < len(text) && k-i < 48; k++ {
		switch c := text[k]; {
		case c == '\n' || c == '\r' || c == ',':
			return cueStrong
		case c == '-' && (k+1 >= len(text) || !nameLetter(text[k+1])):
			return cueNone // "-- a.go --"
		case c == ' ', c == '\'', c == '-', nameLetter(c):
		default:
			return cueNone
		}
	}
	return cueStrong
}

// lineStartCue returns cueStrong when text[k] starts a line.
func lineStartCue(text []byte, k int) nameCue {
	if k == 0 || text[k-1] == '\n' {
		return cueStrong
	}
	return cueNone
}

// nameSignature returns cueStrong when the line that ends at the line
// break text[nl] is a closing ("Best regards,", "Cordialement,") or the
// signature separator "-- ".
func nameSignature(text []byte, nl int) nameCue {
	e := nl
	if e > 0 && text[e-1] == '\r' {
		e--
	}
	if e >= 3 && string(text[e-3:e]) == "-- " || e >= 2 && string(text[e-2:e]) == "--" {
		return lineStartCue(text, e-3+boolInt(text[e-1] == '-'))
	}
	if e == 0 || text[e-1] != ',' {
		return cueNone
	}
	e--
	k := lettersBefore(text, e, 16)
	if k == e || k > 0 && nameLetter(text[k-1]) {
		return cueNone
	}
	var buf [40]byte
	if nameClosingTable.at(lowerName(buf[:0], text[k:e])) {
		return cueStrong
	}
	return cueNone
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// nameVerbs follow a person's name and say it is one ("Chidi Okonkwo
// said", "Ana Lima wrote"). Lower case.
var nameVerbs = map[string]bool{"said": true, "says": true, "wrote": true, "writes": true, "asked": true, "asks": true,
	"told": true, "tells": true, "explained": true, "explains": true, "added": true, "replied": true, "confirmed": true,
	"confirms": true, "argued": true, "agreed": true, "joined": true, "emailed": true, "called": true, "thinks": true,
	"thought": true, "believes": true, "wants": true, "presented": true, "approved": true, "reported": true,
	"signed": true, "mentioned": true, "suggested": true, "recommended": true, "insisted": true, "admitted": true,
	"promised": true, "apologised": true, "apologized": true, "resigned": true, "retired": true, "married": true,
	"lives": true, "lived": true, "works": true, "worked": true, "studied": true, "graduated": true, "died": true}

// personAfter reports whether what follows a name ending at text[e] says
// it is a person's: a verb of nameVerbs, ", who" or "and I".
func personAfter(text []byte, e int) bool {
	rest := text[e:min(len(text), e+16)]
	switch {
	case len(rest) >= 6 && string(rest[:6]) == ", who ", len(rest) >= 7 && string(rest[:7]) == " and I ":
		return true
	case len(rest) < 2 || rest[0] != ' ':
		return false
	}
	k := 1
	for k < len(rest) && rest[k]-'a' < 26 {
		k++
	}
	if k == 1 || !nameVerbBloom.has(rest[1:k]) {
		return false
	}
	return nameVerbTable.at(rest[1:k])
}

// loneWord reports whether w, a word in no list, may be a name alone
// after a strong cue: two letters or more, and not a plural ("Hello
// Gophers", "Hi Folks").
func loneWord(text []byte, w nameWord) bool {
	return w.end-w.start >= 2 && text[w.end-1] != 's'
}

// nameFromContext looks for a name starting with w, a capitalised word
// that is neither a title nor a listed given name (k is nameNone or
// nameSurname), and reports it when its context makes it one: two or
// three name words that include a surname, or follow a cue, or are
// followed by a verb only people take; one word after a cue strong enough
// for it (see nameCue). It returns where the scan goes on.
func (st *scanState) nameFromContext(d *detector, w nameWord, k nameKind, buf *[48]byte) int {
	text := st.text
	if w.end-w.start < 2 || w.initial {
		return w.end // "C Chan" in code, "A. Smith" is nameAfterTitle's or nobody's
	}
	cue := nameCueBefore(text, w.start)
	w2, ok := st.namePart(w.end, buf)
	if !ok {
		if cue == cueStrong && loneWord(text, w) || k == nameSurname && cue >= cueWeak {
			st.emitName(d, w.start, w.end, 0.55)
		}
		return w.end
	}
	if w2.initial {
		return w.end
	}
	k2 := w2.k
	if k2 == nameGiven && k != nameSurname {
		return w.end // "Yesterday Emily Carter": the name starts at the given name
	}
	last, kl := w2, k2
	if w3, ok := st.namePart(w2.end, buf); ok && !w3.initial {
		last, kl = w3, w3.k
	}
	if k == nameSurname && k2 == nameGiven {
		st.emitName(d, w.start, last.end, 0.7) // surname first: "Zhang Wei", "MÜLLER Tobias"
		return last.end
	}
	if cue >= cueWeak || k2 == nameSurname || kl == nameSurname || personAfter(text, last.end) {
		st.emitName(d, w.start, last.end, 0.65)
		return last.end
	}
	return w.end
}

// namePart reads the name word after the separator at text[i]: a
// capitalised word that is not a stop word or title, or an initial.
// Lower-case particles (van, de...) before it are taken with it.
func (st *scanState) namePart(i int, buf *[48]byte) (nameWord, bool) {
	text := st.text
	from := -1 // where the particles start
	for p := 0; p < 3; p++ {
		j := nameSep(text, i)
		if j < 0 {
			return nameWord{}, false
		}
		w, ok := readNameWord(text, j)
		if !ok {
			return nameWord{}, false
		}
		if !w.upper {
			// d'Estaing: a lower-case d' joined to a capitalised word.
			if w.end-w.start > 2 && text[w.start] == 'd' && text[w.start+1] == '\'' {
				if from < 0 {
					from = w.start
				}
				return nameWord{start: from, end: w.end, upper: true}, true
			}
			if !nameParticleTable.at(text[w.start:w.end]) {
				return nameWord{}, false
			}
			if from < 0 {
				from = w.start
			}
			i = w.end
			continue
		}
		if w.initial {
			return w, from < 0
		}
		if w.end-w.start == 1 {
			return nameWord{}, false // a lone capital: Gen Z, Plan B
		}
		if w.k = w.kind(text, buf); w.k == nameStop || w.k == nameTitle {
			return nameWord{}, false
		}
		if from >= 0 {
			w.start = from
		}
		return w, true
	}
	return nameWord{}, false
}

// nameAfterTitle reports the name words after a title; it returns where
// the scan goes on.
func (st *scanState) nameAfterTitle(d *detector, t nameWord, buf *[48]byte) int {
	if t.end-t.start == 1 {
		return t.end // M without its period is not Monsieur
	}
	after := t.end
	if after < len(st.text) && st.text[after] == '.' {
		after++
	}
	after = st.skipDegrees(after)
	first, ok := st.namePart(after, buf)
	if !ok {
		return t.end
	}
	last := first
	for k := 0; k < 2; k++ {
		w, ok := st.namePart(last.end, buf)
		if !ok {
			break
		}
		last = w
	}
	if last.initial {
		return last.end // "Dr J." alone is not a name
	}
	st.emitName(d, first.start, last.end, 0.85)
	return last.end
}

// nameDegrees are the lower-case abbreviations of a doctorate's field that
// German and Austrian usage puts between the title and the name ("Dr.
// med. Hans Weber", "Dr. rer. nat. Schulz").
var nameDegrees = map[string]bool{"med": true, "rer": true, "nat": true, "phil": true, "jur": true, "dent": true,
	"vet": true, "oec": true, "pol": true, "theol": true, "ing": true, "habil": true, "sc": true}

// skipDegrees returns the offset after up to three nameDegrees (each
// followed by its period) after the separator at text[i], or i.
func (st *scanState) skipDegrees(i int) int {
	text := st.text
	for k := 0; k < 3; k++ {
		j := nameSep(text, i)
		if j < 0 {
			return i
		}
		e := j
		for e < len(text) && e-j < 6 && text[e]-'a' < 26 {
			e++
		}
		if e == j || e >= len(text) || text[e] != '.' || !nameDegrees[string(text[j:e])] {
			return i
		}
		i = e + 1
	}
	return i
}

// nameFromGiven reports a given name followed by a surname; it returns
// where the scan goes on.
func (st *scanState) nameFromGiven(d *detector, g nameWord, buf *[48]byte) int {
	w, ok := st.namePart(g.end, buf)
	if !ok {
		// French lists and forms put the surname first, in capitals:
		// "DUPONT Jean", "Nom : RENAUD Oliver".
		if k, ok := st.surnameBefore(g.start, buf); ok {
			st.emitName(d, k, g.end, 0.7)
		} else if g.kind(st.text, buf) == nameGiven && nameCueBefore(st.text, g.start) != cueNone {
			st.emitName(d, g.start, g.end, 0.6) // "Dear Tomasz,", "ask Maria"
		}
		return g.end
	}
	last := w
	if w2, ok := st.namePart(w.end, buf); ok && !w2.initial {
		last = w2
	}
	if last.initial {
		return last.end
	}
	st.emitName(d, g.start, last.end, 0.7)
	return last.end
}

// surnameBefore returns where a surname in capitals ends right before the
// given name at text[g] (one space between) starts: three letters or more,
// all upper case (ASCII or Latin-1), joined by '-' or an apostrophe, at the
// start of a word, and neither a stop word, a title nor a given name.
func (st *scanState) surnameBefore(g int, buf *[48]byte) (int, bool) {
	text := st.text
	if g < 4 || text[g-1] != ' ' {
		return 0, false
	}
	e := g - 1
	k := e
back:
	for k > 0 && e-k < 40 {
		c := text[k-1]
		switch {
		case isUpper(c):
			k--
		case c >= 0x80 && c < 0x9F && c != 0x97 && k >= 2 && text[k-2] == 0xC3:
			k -= 2
		case (c == '-' || c == '\'') && k >= 2 && isUpper(text[k-2]) && k < e:
			k--
		default:
			break back
		}
	}
	if e-k < 3 || !isUpper(text[k]) && text[k] != 0xC3 || !wordStart(text, k) {
		return 0, false
	}
	if k := (nameWord{start: k, end: e}).kind(text, buf); k != nameNone && k != nameSurname {
		return 0, false
	}
	return k, true
}

// namePlaces are words that make the name after them a place's or an
// institution's (Rue Victor Hugo, Lycée Marie Curie, Saint Louis). Lower
// case.
var namePlaces = map[string]bool{"rue": true, "avenue": true, "av": true, "bd": true, "boulevard": true, "place": true,
	"quai": true, "cours": true, "allée": true, "impasse": true, "chemin": true, "route": true, "square": true,
	"collège": true, "college": true, "lycée": true, "école": true, "ecole": true, "hôpital": true, "hopital": true,
	"clinique": true, "université": true, "universite": true, "gare": true, "stade": true, "parc": true, "pont": true,
	"institut": true, "fondation": true, "musée": true, "lac": true, "mont": true, "fort": true, "saint": true,
	"sainte": true, "st": true, "ste": true, "san": true, "santa": true, "são": true, "lake": true, "port": true,
	"mount": true, "cape": true}

// afterPlaceWord reports whether the word before text[start] (one space
// or hyphen between) is one of namePlaces.
func afterPlaceWord(text []byte, start int) bool {
	j := start
	if j == 0 || text[j-1] != ' ' && text[j-1] != '-' {
		return false
	}
	j--
	k := lettersBefore(text, j, 16)
	if k == j || k > 0 && text[k-1] != ' ' && text[k-1] != '\n' && text[k-1] != '(' && text[k-1] != ',' {
		return false
	}
	var buf [32]byte
	return namePlaceTable.at(lowerName(buf[:0], text[k:j]))
}

// emitName records text[start:end] as a name: normalised to lower case
// with single spaces.
func (st *scanState) emitName(d *detector, start, end int, conf float64) {
	var buf [192]byte
	norm := buf[:0]
	space := false
	for i := start; i < end; i++ {
		c := st.text[i]
		switch {
		case c == ' ' || c == '\t':
			space = true
			continue
		case c == 0xC2 && i+1 < end && st.text[i+1] == 0xA0:
			space = true
			i++
			continue
		}
		if space {
			norm = append(norm, ' ')
			space = false
		}
		norm = append(norm, c)
	}
	if afterPlaceWord(st.text, start) {
		return
	}
	var low [192]byte
	key := lowerName(low[:0], norm)
	if !st.s.includeReserved && reservedNameTable.at(key) {
		return
	}
	if nameLabelBefore(st.text, start) {
		conf += 0.15
	}
	st.emit(d.idx, start, end, conf, key, d.mask)
}

// reservedNames are the names forms and manuals use for nobody in
// particular (John Doe, the German Max Mustermann, the British Joe
// Bloggs...): reported only with IncludeReserved, like example.com.
// Lower case, as emitName normalises.
var reservedNames = map[string]bool{"john doe": true, "jane doe": true, "richard roe": true, "jane roe": true,
	"john q. public": true, "joe bloggs": true, "fred bloggs": true, "max mustermann": true,
	"erika mustermann": true, "otto normalverbraucher": true, "jan modaal": true}
