-- Version 18 (PostgreSQL): nothing to change. SQLite rewrites its phase
-- and provenance CHECKs from `IN (…)` to chains of `=` at this version
-- (it built a temporary b-tree for each list on every one-row INSERT);
-- PostgreSQL tests an `IN` list of constants in place.
SELECT 1;
