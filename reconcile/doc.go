// Package reconcile resolves pending charges — an attempt may have reached the processor and
// no answer settled it — by reading what the processor has, never by charging again: the
// pure decision (Decide) on the evidence one check's reads found (Reconciler), the plan of
// what a check records (PlanCheck), the rules of resolution by hand (ManualResolution), and
// the janitor that runs the checks on River. docs/reconciliation.md explains each.
package reconcile
