package decline

import (
	"cmp"
	"time"
)

// The networks' windows.
const (
	visaWindow             = 30 * day
	mastercardShortWindow  = 24 * time.Hour
	mastercardLongWindow   = 30 * day
	processorCapRefusalFor = 30 * day
	// processorRateLimitFor is how long Stripe refuses a card after
	// card_decline_rate_limit_exceeded: "try again after 24 hours".
	processorRateLimitFor = 24 * time.Hour
)

// InFlight is how long after it was sent a pending attempt may still be in flight: the
// longest deadline a caller may give a charge (60 s), with room for the outcome's write. On
// a card in a run of declines (its last known authorization was declined), an attempt in
// flight counts as a possible decline toward Mastercard's caps, so that charges racing for
// the card's last slot cannot all take it; on a card whose last known answer was an
// approval it does not, so concurrent charges on a good card are never refused. Once its
// run has ended unknown it is no decline (see [Pending]).
const InFlight = 65 * time.Second

// Caps are the network caps per card at one processor account. A zero or
// negative field takes its default.
type Caps struct {
	// VisaReattempts30d is the most reattempts of a Visa card in any
	// rolling 30 days; default 15 (some acquirers state 20).
	VisaReattempts30d int `json:"visa_reattempts_30d"`
	// MastercardDeclines24h is the most declines of a Mastercard card in
	// any rolling 24 hours; default 10.
	MastercardDeclines24h int `json:"mastercard_declines_24h"`
	// MastercardDeclines30d is the most declines of a Mastercard card in
	// any rolling 30 days; default 35.
	MastercardDeclines30d int `json:"mastercard_declines_30d"`
}

// The default caps.
const (
	DefaultVisaReattempts30d     = 15
	DefaultMastercardDeclines24h = 10
	DefaultMastercardDeclines30d = 35
)

// DefaultCaps returns the networks' caps: Visa 15 reattempts in 30 days,
// Mastercard 10 declines in 24 hours and 35 in 30 days.
func DefaultCaps() Caps {
	return Caps{
		VisaReattempts30d:     DefaultVisaReattempts30d,
		MastercardDeclines24h: DefaultMastercardDeclines24h,
		MastercardDeclines30d: DefaultMastercardDeclines30d,
	}
}

// withDefaults returns c with every unset field at its default.
func (c Caps) withDefaults() Caps {
	d := DefaultCaps()
	c.VisaReattempts30d = cmp.Or(max(c.VisaReattempts30d, 0), d.VisaReattempts30d)
	c.MastercardDeclines24h = cmp.Or(max(c.MastercardDeclines24h, 0), d.MastercardDeclines24h)
	c.MastercardDeclines30d = cmp.Or(max(c.MastercardDeclines30d, 0), d.MastercardDeclines30d)
	return c
}

// Counters are the counts the caps are checked against, in the windows
// that end at one instant.
type Counters struct {
	// VisaReattempts30d counts reattempts on Visa (or unknown network) in
	// the last 30 days.
	VisaReattempts30d int `json:"visa_reattempts_30d"`
	// MastercardDeclines24h counts declines on Mastercard (or unknown
	// network) in the last 24 hours; a pending attempt is no decline.
	MastercardDeclines24h int `json:"mastercard_declines_24h"`
	// MastercardDeclines30d is the same count over the last 30 days.
	MastercardDeclines30d int `json:"mastercard_declines_30d"`
}

// Rule names the rule behind a refusal or a violation. Its string forms are
// stable.
type Rule string

// The rules.
const (
	// RuleAfterNever: an attempt after a never-class decline (in the same currency, after
	// one whose hold is [HoldCurrency]).
	RuleAfterNever Rule = "after_never"
	// RuleFixData: an attempt with the card data of a fix-data decline.
	RuleFixData Rule = "fix_data"
	// RuleAnotherCard: an attempt on a card whose decline asked for another card
	// ([HoldCard]).
	RuleAnotherCard Rule = "another_card"
	// RuleProcessorRateLimit: an attempt within 24 hours of the processor's refusal for too
	// many declines ([HoldRateLimit]).
	RuleProcessorRateLimit Rule = "processor_rate_limit"
	// RulePossibleDuplicate: a reattempt of a chain whose decline may be a second payment
	// ([HoldNoReattempt]).
	RulePossibleDuplicate Rule = "possible_duplicate"
	// RuleVisa30d: a Visa reattempt beyond the cap in 30 days.
	RuleVisa30d Rule = "visa_30d"
	// RuleMastercard24h: a Mastercard decline beyond the cap in 24 hours.
	RuleMastercard24h Rule = "mastercard_24h"
	// RuleMastercard30d: a Mastercard decline beyond the cap in 30 days.
	RuleMastercard30d Rule = "mastercard_30d"
	// RuleProcessorCap: the processor refused for excessive reattempts
	// (Stripe's previously_declined_do_not_retry).
	RuleProcessorCap Rule = "processor_cap"
	// RuleBeforeMACDelay: an attempt before a Mastercard advice delay ended.
	RuleBeforeMACDelay Rule = "before_mac_delay"
	// RuleSchedule: a reattempt before the class schedule's next slot, or
	// after its last one.
	RuleSchedule Rule = "schedule"
)
