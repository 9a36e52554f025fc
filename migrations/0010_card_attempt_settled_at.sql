-- +goose Up

-- When the gateway learned an attempt's outcome: at its finish, or — for an attempt that was
-- pending first — when reconciliation or an operator settled it. The reattempt report tells a
-- rule broken against what the gateway knew when a later attempt was sent from one broken only
-- in hindsight (the forbidding outcome was still unknown then). NULL while pending.
ALTER TABLE card_attempts ADD COLUMN settled_at timestamptz;
UPDATE card_attempts SET settled_at = at WHERE outcome <> 'pending';

-- +goose Down
ALTER TABLE card_attempts DROP COLUMN settled_at;
