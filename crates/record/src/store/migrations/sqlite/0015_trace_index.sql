-- Version 15 (SQLite): samples are found by trace id alone
-- ((session_id, trace_id) replaced by (trace_id)). Trace ids are random,
-- so each insert lands at a random place in this index; without the
-- session id in every entry it is about half the size, and a bulk
-- import's page cache holds it (importing 1,000,000 samples into SQLite:
-- 14.8-15.0 s with the old index, 13.5 s with this one). The span join
-- still finds a session's traced samples through it:
-- (session_id, trace_id) IN (the session's spans) looks each trace id up.
DROP INDEX samples_trace_id;
CREATE INDEX samples_trace ON samples (trace_id);
