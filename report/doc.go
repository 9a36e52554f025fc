// Package report builds the reattempt audit report: for a period, one row per
// card (processor account, card fingerprint) with its attempts, its declines by
// class and by Visa category, its reattempts, the largest counts in the
// networks' rolling windows, the attempts the gateway refused, and the
// violations of the card network rules, which must be zero.
//
// # Independent of enforcement
//
// The counts come from [decline.Audit], which recounts a card's history from
// scratch and shares no counting code with [decline.Check], the function that
// enforces the rules before each attempt. A fault in enforcement therefore
// shows up in the report as a violation instead of hiding twice. This
// package adds no counting rule of its own: it only cuts the history at the
// period's edges and subtracts.
//
// # Periods and windows
//
// A period is [From, To], both included; the gateway's default is the last 30
// days, and a period is at most [MaxPeriod] long. The networks' windows reach
// back before the period, so a card's history is read from [Lookback] (30 days)
// before From, plus two attempts from before that: the last authorization,
// which says whether a run of declines was open when the read history starts,
// and the first never-class refusal, after which every attempt is a
// violation. Nothing else older can change the report. Then, for each card:
//
//   - attempts, declines, declines by class and by category, reattempts and
//     refusals count what happened in the period;
//   - violations are the attempts of the period that broke a rule, found
//     with the full history before them;
//   - max_reattempts_30d (Visa), max_declines_24h and max_declines_30d
//     (Mastercard) are the largest counts in a rolling window that ends
//     within the period; a window ending at From covers the 30 days (or 24
//     hours) before it.
//
// # Scope
//
// The networks count per processor account, over every merchant that shares
// it, so the counts of a row cover every attempt on the card at that account.
// A report asked for by a merchant ([Query.Merchant]) lists only the cards
// that merchant had an attempt or a reattempt decision on in the period, and
// names no other merchant: merchants counts every merchant involved, while
// merchant_ids lists only the asking one. A report without a merchant (the
// command line, run by the deployment's operator) covers every card and names
// every merchant.
package report
