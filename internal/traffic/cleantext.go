package traffic

// The wording of the clean mix: an online bicycle shop's support assistant,
// its changelog and translation templates, and the questions its users and
// developers ask. Written for this project.

var systemPrompts = []string{
	"You are a helpful assistant. Answer briefly and accurately.",
	"You are the writing assistant of a small engineering team. Be concise; prefer plain words.",
	"You help developers with Go code. Show short examples when they help.",
	"You are a careful reviewer. Point out problems first, then suggestions.",
}

const supportPrompt = "You are the support assistant of Velocita, an online bicycle shop. Answer customers politely in at most three sentences."

// longSystemPrompt is the long, shared system prompt of one application:
// every caller of the application sends it first.
const longSystemPrompt = `You are Velocita's customer assistant. Velocita sells city, road, gravel and electric bicycles, spare parts and accessories online, and runs two workshops.

Tone: friendly, direct, no marketing superlatives. Answer in the customer's language. Keep answers under one hundred and twenty words unless the customer asks for detail.

Orders: customers can follow an order from the link in their confirmation e-mail. Orders ship within two working days; bicycles ship assembled at ninety percent and need the handlebar and pedals fitted. Delivery takes three to five working days in mainland France and five to eight elsewhere in the European Union.

Returns: unused items can be returned within thirty days of delivery in their original packaging. Bicycles must come back with their accessories and manuals. Refunds reach the original payment method within five working days of the return being checked.

Warranty: frames carry a five-year warranty, components two years, batteries of electric bicycles two years or five hundred charge cycles. Wear parts (tyres, chains, brake pads, cables) are not covered.

Workshops: the Lyon and Grenoble workshops service any brand. Appointments are booked online; a standard service takes one day.

Never ask for a full card number or a password. If a customer reports an accident or an injury, give the emergency number and offer a call back from a person. If you do not know, say so and offer to open a ticket.`

type template struct {
	instruction string
	inputs      []string
}

var templates = []template{
	{"Rewrite the following product fact as one friendly sentence for the public changelog: %s", []string{
		"gravel frame GX-4 now accepts 50 mm tyres",
		"battery range estimate shown in the app after each ride",
		"workshop booking opens 14 days ahead instead of 7",
		"new size XS for the Urbana step-through frame",
		"order tracking page shows the courier's delivery window",
		"rear rack R2 rated for 27 kg instead of 25 kg",
		"gift cards can be split over two orders",
		"saddle height guide added to every product page",
		"returns label can be printed at any partner shop",
		"brake pad wear alerts for connected e-bikes",
		"spare derailleur hangers listed per frame model",
		"the cargo bike trailer hitch fits 12 mm thru-axles",
	}},
	{"Translate into French, keeping the product names: %s", []string{
		"Your order has shipped and should arrive on Thursday.",
		"The battery charger is sold separately.",
		"Please bring the bicycle to the workshop ten minutes early.",
		"This helmet meets the EN 1078 standard.",
		"We could not charge your card; please update your payment method.",
		"The frame is made of recycled aluminium.",
		"Your refund has been issued.",
		"Tyre pressure is printed on the sidewall.",
	}},
	{"Classify the sentiment of this review as positive, negative or neutral, and give one reason: %s", []string{
		"Fast delivery, but the pedals were missing from the box.",
		"The gravel bike is light and the gears are smooth.",
		"Workshop fixed my brakes in an hour, great service.",
		"Battery died after a month and support took a week to answer.",
		"Does what it says. Nothing more.",
		"The lock is heavy but it feels solid.",
		"Sizing guide was wrong for me, had to exchange the frame.",
	}},
	{"Summarise this support ticket in one line for the weekly report: %s", []string{
		"Customer asks whether the Urbana 3 can carry a child seat; answered yes with the R2 rack.",
		"Courier lost a parcel with two inner tubes; reshipped at no cost.",
		"E-bike display shows error E07 after rain; advised drying and a firmware update.",
		"Customer wants to move a workshop appointment from Monday to Wednesday.",
		"Question about VAT invoices for a company purchase of four bicycles.",
		"Return of a helmet that was too small; exchanged for size L.",
	}},
}

type faq struct {
	question    string
	paraphrases []string
	answer      string // what a FAQ bot answers to every wording
}

var faqs = []faq{
	{"How do refunds work?", []string{"how does a refund work", "When do I get my money back after a return?", "What is your refund process?"},
		"Once your return reaches our warehouse we check it within two working days, then refund the original payment method; the money usually shows on your account five working days later. Shipping costs are refunded when the item was faulty."},
	{"How long does delivery take?", []string{"When will my order arrive?", "how many days for shipping", "What are the delivery times?"},
		"Orders leave our warehouse within two working days. Delivery then takes three to five working days in mainland France and five to eight days elsewhere in the European Union; the confirmation e-mail has a tracking link."},
	{"Can I return a bicycle?", []string{"Is it possible to send a bike back?", "do you accept returns on bikes", "Can bicycles be returned?"},
		"Yes: an unused bicycle can be returned within thirty days of delivery, with its accessories and manuals, in the original box. Book the pickup from your order page and we send the courier label by e-mail."},
	{"What does the warranty cover?", []string{"What is covered by the guarantee?", "warranty on the frame?", "Which parts are under warranty?"},
		"Frames are covered for five years and components for two years against manufacturing defects. Wear parts such as tyres, chains, brake pads and cables are not covered, nor is damage from a crash."},
	{"How do I book a workshop appointment?", []string{"Can I get my bike serviced at your workshop?", "how to book a repair", "Where do I book a service?"},
		"Pick the Lyon or Grenoble workshop on our website, choose a day and the service you need, and drop the bicycle off before ten in the morning. A standard service is ready the same evening."},
	{"Do you ship outside France?", []string{"Do you deliver to Belgium?", "international shipping?", "Can you send an order to Germany?"},
		"We deliver to every country of the European Union and to Switzerland. Delivery takes five to eight working days outside mainland France; customs fees for Switzerland are paid on delivery."},
	{"How do I track my order?", []string{"Where is my parcel?", "order tracking link", "How can I follow my delivery?"},
		"Open the link in your confirmation e-mail, or sign in and go to My orders: each parcel shows the courier's tracking number and the expected delivery window as soon as it leaves our warehouse."},
	{"Is the battery covered by the warranty?", []string{"How long is the e-bike battery guaranteed?", "battery warranty", "What if my battery stops holding charge?"},
		"Batteries of our electric bicycles are guaranteed for two years or five hundred full charge cycles, whichever comes first, and one that holds less than seventy percent of its capacity within that time is replaced."},
}

var ragQuestions = []string{
	"What does this part of the documentation say?",
	"Summarise the main rule described here.",
	"Which function or type should I use, according to this text?",
	"What are the conditions mentioned in this passage?",
	"Give one example based on this context.",
}

var openers = []string{"How should I", "What is the best way to", "Can you explain how to", "Is it safe to", "Why would I",
	"When should I", "Could you help me", "What happens if I"}

var topics = []string{"adjust the front derailleur", "store an e-bike battery over winter", "choose a frame size",
	"clean a chain", "set tyre pressure for gravel", "pack a bicycle for a flight", "pick a lock for the city",
	"plan a 100 km ride", "write a changelog entry", "structure a Go package", "name a test table",
	"handle context cancellation in Go", "review a pull request", "split a long function", "read a stack trace",
	"measure a benchmark fairly", "describe a bug report", "document an API"}

var details = []string{"for a beginner", "without special tools", "in under ten minutes", "on a tight budget",
	"for a commuter", "with an example", "step by step", "for a team of five", "in a few sentences", "and avoid common mistakes"}
