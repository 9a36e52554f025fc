// Package jobs is paygate's durable background work: automatic reattempts, reconciliation
// of unknown outcomes, the completer, housekeeping. It runs on River (riverqueue) with its
// pgx v5 driver, on the same PostgreSQL database as the store of record.
//
// # Why River
//
// A job lives in a table of the store's own database, so it can be enqueued in the same
// transaction as the state change that needs it (Queue.InsertTx): a reattempt charge and
// the job that will send it commit together or not at all, and no worker sees the job
// before the commit. There is no second system to keep consistent with the database, and
// nothing is lost when a process dies: a job is a row until it is finished. River is the
// one durable job system of paygate; nothing else schedules work in the background.
//
// Its schema is River's own migrations, applied by Migrate (`paygate migrate`) beside the
// store's and checked by Current (readiness). rivermigrate takes no lock, so Migrate holds
// a PostgreSQL advisory lock while it runs: replicas may all migrate at start-up.
//
// # Policies: the single-attempt rule for writes
//
// Each job kind is registered with a Policy (Add). Kinds whose work may write to the
// processor are WriteOnce: River makes exactly one attempt. Their own retry is the charge
// engine's loop, which knows the processor key, the persisted body, the budget and the
// 24 h rule ("The 24 h rule, everywhere" in the design); a second retry layer in River
// would multiply attempts and could write under a key past its 24 hours. A WriteOnce job
// that fails, times out, or whose replica dies is discarded: it becomes a dead letter and
// never runs again unless someone replays it. Kinds that are safe to run again (processor
// reads, idempotent housekeeping) are Retryable(n): River retries them with its
// exponential backoff, at most n attempts in all, then they are dead letters too.
//
// The policy is enforced on every insert path by an insert middleware (including inserts
// through the raw River client and periodic jobs), and a kind this binary does not know
// gets one attempt. A worker that knows nothing was sent may return river.JobSnooze(0) on
// shutdown to be resumed without spending its attempt; a job that must run again later
// for the same key (reconciliation's re-checks) also snoozes rather than inserting a
// successor, since its own live row holds the key (UniquePerArgs).
//
// Jobs go to QueueDefault or, for reconciliation, QueueReconcile, whose concurrency is set
// apart (Config.ReconcileWorkers) so that processor reads never take the workers charges
// need. A kind's queue is part of its policy (Policy.InQueue). Rate limits against the
// processor belong to the workers that call it.
//
// # Dead letters and replay
//
// River's discarded jobs are the dead-letter queue: each keeps its kind, args and every
// attempt's error, for DeadRetention (30 days by default). Dead lists them newest first,
// a page at a time, optionally for one merchant (jobs inserted with ForMerchant). The
// paygate_jobs_dead gauge (RegisterMetrics) counts them on every scrape.
//
// Replay is the one deliberate way to run a dead job again. It locks the job's row, checks
// it is still discarded (ErrNotDead otherwise, so racing operators replay it once), asks
// the ReplayGuard, then has River put the same job back with one more attempt and records
// who replayed it and when (database clock) in the job's metadata, all in one transaction.
// The guard is where the 24 h rule and the network caps are checked again before a write
// runs; a refusal is a *ReplayRefusedError carrying the guard's reason. Without a guard,
// WriteOnce kinds are never replayed.
//
// # Replicas
//
// Any number of `paygate serve` replicas share one database, each with its Queue started.
// River fetches jobs with SELECT ... FOR UPDATE SKIP LOCKED, so each job is handed to one
// replica. One replica at a time is elected leader (a row in river_leader with a TTL,
// re-elected on resignation or expiry) and alone runs the maintenance: moving scheduled
// and retryable jobs to available, enqueueing periodic jobs (Registry.Every, unique per
// period so that a change of leader does not double a run within one period), rescuing
// stuck jobs and deleting old finished ones.
//
// A job whose replica died stays running until it has been running longer than both
// its timeout and Config.RescueStuckJobsAfter; the leader's rescuer (every 30 s) then
// retries it if its policy allows another attempt, else discards it into the dead letters
// with the error "Stuck job rescued by JobRescuer". A write is therefore never run twice
// by River; the completer and the guarded replay decide what happens to it.
//
// # SQL
//
// This package reaches River's tables through River's client, except for three
// statements on River's own table that River does not offer: the row lock and the audit
// entry of a replay, and the count of the gauge. The store's tables are never touched here.
package jobs
