-- Version 16 (SQLite): the engine's own metrics, scraped before and after
-- a session (issue 28).
-- engine_scrapes: one row per session and moment ('start': before the
-- first request, 'end': after the last), the URL scraped (no credentials),
-- when, the HTTP status and the Prometheus text body as received (secrets
-- the session knows scrubbed), or why the scrape failed.
CREATE TABLE engine_scrapes (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    moment      TEXT NOT NULL CHECK (moment IN ('start', 'end')),
    taken_at    TEXT NOT NULL,
    url         TEXT NOT NULL,
    status      INTEGER,
    body        TEXT,
    error       TEXT,
    PRIMARY KEY (session_id, moment)
) STRICT;
