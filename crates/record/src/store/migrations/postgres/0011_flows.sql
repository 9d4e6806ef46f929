-- Version 11 (PostgreSQL): flows (an app path of several requests, the
-- last one measured).
-- flow_wait_ms: from the flow's start (the first step's start, the user's
-- action) to the measured request's start, ms; NULL for a single request.
-- flow_steps: the earlier steps in order, a JSON list of
-- {"name", "ms", "status"}; NULL for a single request.
ALTER TABLE samples ADD COLUMN flow_wait_ms DOUBLE PRECISION;
ALTER TABLE samples ADD COLUMN flow_steps JSONB;
