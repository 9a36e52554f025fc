// Package decline turns a card decline into a reattempt policy and decides,
// from the history of one card at one processor account, whether one more
// authorization may be sent.
//
// A decline is an answer, not an outage: the issuer saw the request and said
// no. Whether and when to ask again is set by the card networks, and asking
// too often costs fees and approval rates. This package holds the pure part of
// that policy: no database and no clock. The store keeps the history, reads the
// database clock and calls [Check] inside a transaction under a row lock, so
// two attempts racing for the last slot of a window cannot both pass.
//
// # Classes
//
// [Classify] reads the evidence a decline carries, most specific first: the
// network's own response code together with the Mastercard Merchant Advice
// Code, then Stripe's advice_code, Stripe's decline_code, and Stripe's error
// code (a card error may carry expired_card, incorrect_cvc or
// card_decline_rate_limit_exceeded without a decline_code). It returns one
// of six classes, each with its own policy, and a [Hold] that narrows or
// adds to it:
//
//   - [Never]: the issuer will never approve (Visa category 1, Mastercard
//     advice 03 and 21, lost, stolen, closed or revoked accounts). No new
//     charge on that card at that processor account, ever; after Stripe's
//     currency_not_supported or card_not_supported ([HoldCurrency]), none in
//     that currency, while other charges on the card go on.
//   - [FixData]: the details are wrong or out of date (Visa category 3 but
//     1A, Mastercard advice 01, expired card, wrong CVC). Only a payment
//     method with another fingerprint or another expiry may be charged; after
//     data the shopper typed wrong ([HoldPaymentMethod]: CVC, postal code,
//     address, PIN), any other payment method, the data entered again; after
//     Stripe's pin_try_exceeded ([HoldCard]), only another card.
//   - [Authenticate]: the issuer asks for the cardholder's authentication
//     (Stripe's authentication_required, Visa 1A; a 3-D Secure card charged
//     off session). The card data are right and the same card works once the
//     cardholder authenticates, so the card is not blocked: new charges,
//     which the cardholder can authenticate, go on (they count for the caps
//     like any attempt; Visa lists 1A in category 3, the category recorded).
//     A reattempt of the declined charge is merchant-initiated, without the
//     cardholder, and cannot authenticate: the class has no schedule, and
//     [Check] refuses such a reattempt with schedule_exhausted, so no
//     automatic chain runs it. No other class fits: [FixData] would block the
//     card until its data change, which never helps, and a retryable class
//     would send reattempts that cannot succeed.
//   - [Funds]: not enough money or credit now (Visa 51, 61, 65, Mastercard
//     advice 02 and 24–30). Reattempts at +1, +3, +5, +7, +10 and +14 days,
//     and never before the delay a Mastercard advice code asks for.
//   - [IssuerTransient]: the issuer or its switch could not answer (Visa 19,
//     91, 96). Reattempts at +1 hour, +1, +3 and +7 days.
//   - [Generic]: no usable reason (Visa category 4, such as 05 "do not
//     honor", and every code this package does not know). Reattempts at +2,
//     +5, +9 and +14 days.
//
// Two holds add to any class: Stripe's card_decline_rate_limit_exceeded, its
// own refusal of a card declined too often ([HoldRateLimit]: no attempt on the
// card for 24 hours), and duplicate_transaction ([HoldNoReattempt]: the
// declined charge may be a second payment; its chain is not reattempted).
//
// When two pieces of evidence disagree, a class that blocks reattempts wins
// over one that allows them, whichever field it came from: [Never] over
// [FixData] over [Authenticate] over the retryable classes. Among retryable
// classes the most specific evidence decides. So Stripe's
// authentication_required wins over a network code that reads otherwise
// (Mastercard's European soft decline is response code 65, which this
// package reads as funds). A wrongly refused reattempt loses one sale; a
// wrongly sent one costs a network fee and the issuer's trust in the merchant.
//
// # Visa categories
//
// Visa's excessive reattempt rules sort decline response codes into four
// categories: 1 "issuer will never approve", 2 "issuer cannot approve at this
// time", 3 "issuer cannot approve with these details" (data quality) and 4
// "generic response codes", which is also where every code not listed in the
// first three falls. The tables are the acquirers' (Checkout.com, Worldpay,
// TabaPay, Cielo), with Visa's changes since 2021: 03, 62, 78 and 93 moved to
// category 2, 5C and 9G joined it in April 2025 and 83 in October 2026; an 83
// decides whatever else the decline carries, as Visa says no other code can
// override it. A category-2 code gets a retryable class (but 75, PIN tries
// exceeded, which asks for another card, as Stripe does). The category is the
// network code's when it is known, else that of the Visa code the deciding
// Stripe code stands for, else the class's: category 1 wins over a
// category-2 signal only where the network code says so.
//
// Any reattempt after a category 1 decline is excessive,
// and so is each reattempt beyond 15 of the same transaction in 30 days (some
// acquirers now state 20). Not knowing which declines are "the same
// transaction", this package counts every reattempt on the card at the
// processor account, whatever the amount and the category: stricter than
// Visa, never looser. The [Category] of a Visa decline is recorded with its
// class; it is 0 for other networks.
//
// # Mastercard Merchant Advice Codes
//
// Mastercard's issuers attach a Merchant Advice Code ([MAC]) to a decline to
// tell the merchant what to do next: 01 new account information available, 02
// cannot approve at this time, try again later, 03 do not try again, 21
// payment cancellation (the cardholder stopped the recurring payment), and 24
// to 30 retry after 1 hour, 24 hours, 2, 4, 6, 8 or 10 days ([MACDelay]).
// Mastercard's excessive attempt rules also cap declines on one card at one
// merchant at 10 in 24 hours and 35 in 30 days.
//
// # Caps and schedules
//
// Caps are counted per (processor account, card fingerprint), over all
// amounts, since one processor account is one merchant to the networks. A
// reattempt is any authorization after a decline, customer- or
// merchant-initiated; an approval ends the run. A pending attempt (outcome
// unknown) sent during a run is a reattempt, but it neither opens nor ends a
// run and is no decline until it is resolved: the rules hold against what is
// known, and [Audit] lists what broke them only in hindsight. Windows are
// rolling and half-open: the 30 days
// before t are the instants after t−30d up to and including t. [Check] applies
// the caps, the never and fix-data rules and the holds, Mastercard delays
// and, for a reattempt of a declined charge, the class's schedule. A cap in force is
// refused as network_cap_reached on every network, with the time its window
// frees, whatever schedule slot or advice delay also waits; too_early is for
// those alone, once no cap is in force. [Audit] recounts a history from
// scratch with its own code and lists the violations, so the reattempt report
// does not trust the code it audits.
//
// Schedule offsets count from the first decline of a chain (the declined
// charge and its reattempts), not from the previous attempt, so a late
// reattempt does not push the rest of the schedule back. A day is 24 hours of
// elapsed time.
package decline
