-- Version 6 (PostgreSQL): kernel receive timestamps.
-- clock: which clock the arrival stamps (ttfb_ms … last_token_ms) come from,
-- 'kernel' (the kernel's receive time of the read that delivered the bytes)
-- or 'user' (when the client's code read them); NULL when nothing arrived
-- or the row predates this version.
-- ttft_user_ms: the user-space stamp of the first content token.
-- client_lag_ms: kernel receive time to the client handling the first
-- content token, ms.
-- ttft_read_events: stream events delivered by the read that carried the
-- first content token, itself included.
ALTER TABLE samples ADD COLUMN clock TEXT CONSTRAINT samples_clock_known CHECK (clock IN ('kernel', 'user'));
ALTER TABLE samples ADD COLUMN ttft_user_ms DOUBLE PRECISION;
ALTER TABLE samples ADD COLUMN client_lag_ms DOUBLE PRECISION;
ALTER TABLE samples ADD COLUMN ttft_read_events BIGINT;
