-- Version 2 (SQLite): the phase column refuses names outside the
-- vocabulary (firsttoken_record::vocab::PhaseKind). SQLite cannot add a
-- CHECK to a table, so samples is rebuilt: same columns in the same order,
-- every row and id kept. The store first refuses to migrate (naming them)
-- if rows hold unknown phases.
CREATE TABLE samples_v2 (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq               INTEGER NOT NULL CHECK (seq >= 0),
    phase             TEXT NOT NULL CHECK (phase IN ('ping', 'cold', 'warm', 'fresh', 'direct', 'concurrency', 'rate')),
    path              TEXT,
    strategy          TEXT,
    concurrency       INTEGER,
    intended_start_ms REAL,
    actual_start_ms   REAL NOT NULL,
    started_at        TEXT NOT NULL,
    provenance        TEXT NOT NULL CHECK (provenance IN ('measured', 'emulated', 'imported', 'synthetic')),
    worker            INTEGER NOT NULL,
    warmup            INTEGER NOT NULL CHECK (warmup IN (0, 1)),
    connection        TEXT NOT NULL CHECK (connection IN ('fresh', 'reused')),
    http_version      TEXT,
    dns_ms            REAL,
    connect_ms        REAL,
    tls_ms            REAL,
    sent_ms           REAL,
    ttfb_ms           REAL,
    headers_ms        REAL,
    ttfe_ms           REAL,
    ttfr_ms           REAL,
    ttft_ms           REAL,
    last_token_ms     REAL,
    e2e_ms            REAL,
    content_chunks    INTEGER NOT NULL,
    output_tokens     INTEGER,
    input_tokens      INTEGER,
    tokens_per_s      REAL,
    itl_p50_ms        REAL,
    itl_p99_ms        REAL,
    status            INTEGER,
    request_id        TEXT,
    provider          TEXT,
    route             TEXT,
    cost_usd          REAL,
    server_timing     TEXT CHECK (server_timing IS NULL OR json_valid(server_timing)),
    tls               TEXT CHECK (tls IS NULL OR json_valid(tls)),
    error_kind        TEXT,
    error_message     TEXT,
    CHECK ((error_kind IS NULL) = (error_message IS NULL))
) STRICT;
INSERT INTO samples_v2 SELECT * FROM samples;
DROP TABLE samples;
ALTER TABLE samples_v2 RENAME TO samples;
CREATE INDEX samples_session_id ON samples (session_id, actual_start_ms);
