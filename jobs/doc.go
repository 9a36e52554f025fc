// Package jobs is paygate's River plumbing: the job queue on the store's database, the
// policies that let a job that writes to the processor run once (WriteOnce), the dead
// letters and their deliberate replay, River's migrations and the queue's metrics. The jobs
// themselves belong to their owners (reconcile's janitor, charge's automatic chains).
// docs/jobs.md explains the rules.
package jobs
