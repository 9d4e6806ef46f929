-- Version 10 (PostgreSQL): tool calls and the first output.
-- ttftc_ms: the first tool call (a delta that opened a tool call or
-- streamed its arguments), ms from the request start; not a content token.
-- first_output_ms: the earlier of ttft_ms and ttftc_ms.
-- first_output: what came first, 'text' or 'tool_call'; NULL when neither.
-- incomplete_reason: why the answer stopped early when the stream said so
-- (the Responses API's response.incomplete reason).
ALTER TABLE samples ADD COLUMN ttftc_ms DOUBLE PRECISION;
ALTER TABLE samples ADD COLUMN first_output_ms DOUBLE PRECISION;
ALTER TABLE samples ADD COLUMN first_output TEXT CONSTRAINT samples_first_output_known CHECK (first_output IN ('text', 'tool_call'));
ALTER TABLE samples ADD COLUMN incomplete_reason TEXT;
