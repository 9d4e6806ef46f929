-- Version 12 (PostgreSQL): conversations. The phase column also accepts
-- 'conversation' (a turn of a multi-turn conversation), and samples gain
-- turn (1 for a conversation's first message), history_messages (the
-- messages the conversation held before the turn) and request_bytes (the
-- measured request's body size).
ALTER TABLE samples DROP CONSTRAINT samples_phase_known;
ALTER TABLE samples ADD CONSTRAINT samples_phase_known
    CHECK (phase IN ('ping', 'cold', 'warm', 'fresh', 'direct', 'concurrency', 'rate', 'conversation'));
ALTER TABLE samples ADD COLUMN turn BIGINT CHECK (turn IS NULL OR turn >= 1);
ALTER TABLE samples ADD COLUMN history_messages BIGINT CHECK (history_messages IS NULL OR history_messages >= 0);
ALTER TABLE samples ADD COLUMN request_bytes BIGINT CHECK (request_bytes IS NULL OR request_bytes >= 0);
