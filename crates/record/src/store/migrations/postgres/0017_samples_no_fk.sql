-- Version 17 (PostgreSQL): samples no longer carry a foreign key to
-- sessions. PostgreSQL checks a foreign key with a trigger per inserted
-- row, queued and run at the end of the statement: after the COPY of a
-- 1,000,000-sample import it ran 1,000,000 lookups on one core, a
-- quarter of the import (20.25 s with the key, 15.06 s without, the
-- same export into a fresh database). Every writer stores a session
-- before its samples in the same transaction, and deleting a session
-- deletes its samples itself (Store::delete_session), where the key's
-- ON DELETE CASCADE did.
ALTER TABLE samples DROP CONSTRAINT samples_session_id_fkey;
