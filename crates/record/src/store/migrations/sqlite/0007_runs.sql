-- Version 7 (SQLite): runs across agents (issue 14); see the PostgreSQL
-- migration of the same version for the meaning of each column.
CREATE TABLE runs (
    run_id           TEXT PRIMARY KEY,
    created_at       TEXT NOT NULL,
    segments         INTEGER NOT NULL CHECK (segments > 0),
    planned_requests INTEGER NOT NULL CHECK (planned_requests >= 0),
    config_hash      TEXT NOT NULL,
    start_at         TEXT
) STRICT;
CREATE TABLE run_sessions (
    session_id           TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    run_id               TEXT NOT NULL REFERENCES runs (run_id),
    segment_index        INTEGER NOT NULL CHECK (segment_index >= 0),
    segment_count        INTEGER NOT NULL CHECK (segment_index < segment_count),
    segment_requests     INTEGER NOT NULL CHECK (segment_requests >= 0),
    ranges               TEXT NOT NULL CHECK (json_valid(ranges)),
    clock_offset_ms      REAL,
    clock_uncertainty_ms REAL,
    began_at_ms          REAL
) STRICT;
CREATE INDEX run_sessions_run ON run_sessions (run_id, segment_index);
