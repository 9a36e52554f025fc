// Package report builds the reattempt audit report: one row per card (processor account,
// fingerprint, network) over a period, counted by decline.Audit independently of the
// enforcement that decided each attempt, with the violations found. docs/network-rules.md
// says how it counts.
package report
