-- Version 7 (PostgreSQL): runs across agents (issue 14).
-- runs: one row per run id, written by the first agent that joins it (the
-- others check they agree): how many segments (agents) share its load, the
-- requests of the whole protocol, a hash of the config they all run, and
-- the common start time (RFC 3339 UTC, store clock) when one was given.
-- run_sessions: which session took part in which run as which segment,
-- its share of the requests, the segment indices it ran (JSON [[start,
-- end), ...]: a rerun of a failed segment runs only what is missing), its
-- clock offset to the store's clock and that offset's uncertainty (ms),
-- and when its first measured request was released, in ms since the Unix
-- epoch on the store's clock.
CREATE TABLE runs (
    run_id           TEXT PRIMARY KEY,
    created_at       TEXT NOT NULL,
    segments         BIGINT  NOT NULL CHECK (segments > 0),
    planned_requests BIGINT NOT NULL CHECK (planned_requests >= 0),
    config_hash      TEXT NOT NULL,
    start_at         TEXT
);
CREATE TABLE run_sessions (
    session_id           TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    run_id               TEXT NOT NULL REFERENCES runs (run_id),
    segment_index        BIGINT  NOT NULL CHECK (segment_index >= 0),
    segment_count        BIGINT  NOT NULL CHECK (segment_index < segment_count),
    segment_requests     BIGINT NOT NULL CHECK (segment_requests >= 0),
    ranges               JSONB NOT NULL,
    clock_offset_ms      DOUBLE PRECISION,
    clock_uncertainty_ms DOUBLE PRECISION,
    began_at_ms          DOUBLE PRECISION
);
CREATE INDEX run_sessions_run ON run_sessions (run_id, segment_index);
