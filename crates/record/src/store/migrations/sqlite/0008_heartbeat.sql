-- Version 8 (SQLite): agents' heartbeats (issue 14).
-- heartbeat_at_ms: when the agent running this session last said it was
-- alive, in ms since the Unix epoch on the store's clock (its own clock
-- plus its measured offset); heartbeat_every_ms: how often it promised
-- to. A running session silent for several of its intervals is taken as
-- dead: its run reads partial, and a rerun of its segment marks it so.
ALTER TABLE run_sessions ADD COLUMN heartbeat_at_ms REAL;
ALTER TABLE run_sessions ADD COLUMN heartbeat_every_ms REAL
    CHECK (heartbeat_every_ms IS NULL OR heartbeat_every_ms > 0);
