// Package decline holds the card networks' rules on declined cards: the decline taxonomy
// (classes, Visa categories, Mastercard advice codes, holds), reattempt schedules, the
// network caps (Check, with Compact, the part of a card's history the rules still need),
// and their independent recount (Audit). Every function is pure. docs/network-rules.md
// explains the rules.
package decline
