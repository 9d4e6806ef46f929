-- Version 3 (SQLite): each test account a session creates, recorded the
-- moment it exists (Store::add_test_account), so a session that crashed
-- before its cleanup still knows which accounts to delete.
CREATE TABLE test_accounts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    account_id TEXT NOT NULL,
    UNIQUE (session_id, account_id)
) STRICT;
