package store

import "github.com/jackc/pgx/v5/pgxpool"

// Statements are the store's static statements of a charge's life, by name, for the test that
// prepares each against the schema.
var Statements = map[string]string{
	"create": createSQL, "finish": finishSQL, "finish_settled": finishSettledSQL, "finish_first": finishFirstSQL, "card_lock": cardLockSQL, "card_history": cardHistorySQL,
	"card_state": cardStateSQL, "card_recent": cardRecentSQL, "chain_attempts": chainAttemptsSQL,
	"write_card_state": writeCardStateSQL, "insert_decision": insertDecisionSQL, "key": keySQL, "key_charge": keyChargeSQL, "live_reference": liveReferenceSQL,
	"live_reattempt": liveReattemptSQL, "insert_key": insertKeySQL, "lock_key": lockKeySQL,
	"insert_charge": insertChargeSQL, "created_event": createdEventSQL, "record_card": recordCardSQL,
	"reopen": reopenSQL, "stuck_keys": stuckKeysSQL, "look_start": lookStartSQL, "advance_watermark": advanceWatermarkSQL, "claim_sweep": claimSweepSQL,
	"card_outcome": cardOutcomeSQL, "charge_card_lock": chargeCardLockSQL, "event": eventSQL, "insert_check": insertCheckSQL,
	"create_group_locks": createGroupLocksSQL, "create_group": createGroupSQL, "generic_plan": genericPlanSQL,
	"finish_first_group": finishFirstGroupSQL,
}

// NewGrouping is New on a pool whose creates and plain approvals run in groups, with leaders
// statements of each kind at a time.
func NewGrouping(pool *pgxpool.Pool, leaders int) *DB {
	db := &DB{pool: pool, raw: pool, firstCheck: DefaultFirstCheckAfter}
	db.startGroups(leaders)
	return db
}

// WaitingCreates is how many creates wait for a create statement to end.
func (db *DB) WaitingCreates() int { return db.creates.waiting() }

// WaitingFinishes is how many plain approvals wait for an approval statement to end.
func (db *DB) WaitingFinishes() int { return db.finishes.waiting() }

// StandingSQL reads where a charge stands when a check is recorded, for the test of its plan.
const StandingSQL = standingSQL

// EncodeAttempts, DecodeAttempts, EncodeAnswer and DecodeAnswer expose the attempt log's and
// the stored answer's encodings to the tests.
var (
	EncodeAttempts = encodeAttempts
	DecodeAttempts = decodeAttempts
	EncodeAnswer   = encodeAnswer
	DecodeAnswer   = decodeAnswer
)

// StopGrouping has db's later creates and finishes run alone, leaving its pool open.
func (db *DB) StopGrouping() { db.stopGroups() }
