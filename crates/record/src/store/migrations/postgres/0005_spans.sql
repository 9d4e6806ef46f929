-- Version 5 (PostgreSQL): server-side traces joined to samples.
-- samples.trace_id: the W3C trace id the request sent in its traceparent
-- header (32 lowercase hex digits), NULL when it sent none.
-- spans: the app's OpenTelemetry spans collected or imported into a session,
-- times in ns since the Unix epoch on the server's clock (64-bit integers),
-- attributes and events as JSON (secret-looking values redacted).
ALTER TABLE samples ADD COLUMN trace_id TEXT;
CREATE INDEX samples_trace_id ON samples (session_id, trace_id);
CREATE TABLE spans (
    id              BIGSERIAL PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    trace_id        TEXT NOT NULL,
    span_id         TEXT NOT NULL,
    parent_span_id  TEXT,
    name            TEXT NOT NULL,
    kind            TEXT NOT NULL CONSTRAINT spans_kind_known CHECK (kind IN ('unspecified', 'internal', 'server', 'client', 'producer', 'consumer')),
    service         TEXT,
    start_unix_nano BIGINT NOT NULL,
    end_unix_nano   BIGINT NOT NULL,
    error           BOOLEAN NOT NULL DEFAULT FALSE,
    attributes      JSONB NOT NULL DEFAULT '{}',
    events          JSONB NOT NULL DEFAULT '[]',
    UNIQUE (session_id, trace_id, span_id)
);
CREATE INDEX spans_session_trace ON spans (session_id, trace_id);
