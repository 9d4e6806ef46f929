-- Version 17 (SQLite): nothing to change. PostgreSQL drops the samples'
-- foreign key to sessions at this version (its per-row trigger was a
-- quarter of a large import); SQLite checks the key inline, one probe of
-- the sessions' primary key per inserted row, and dropping it would mean
-- rebuilding the samples table. Deleting a session deletes its samples
-- itself on both stores (Store::delete_session).
SELECT 1;
