-- Version 19 (PostgreSQL): a large session's frame kept as bytes, so a report
-- reads it as a few blobs instead of every row (see store/frames.rs).
-- session_frames: one row per chunk of a session's stored frame (chunk 0
-- its head), each saying the frame's format and which samples it was
-- made from (their count and highest id: samples are only ever added, or
-- deleted with their session, so the two name the set). A frame whose
-- stamp no longer matches the session's samples is ignored and replaced.
CREATE TABLE session_frames (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    chunk       BIGINT NOT NULL CHECK (chunk >= 0),
    format      BIGINT NOT NULL,
    samples     BIGINT NOT NULL,
    last_id     BIGINT NOT NULL,
    bytes       BYTEA NOT NULL,
    PRIMARY KEY (session_id, chunk)
);
-- The bytes come compressed: PostgreSQL need not try again.
ALTER TABLE session_frames ALTER COLUMN bytes SET STORAGE EXTERNAL;
