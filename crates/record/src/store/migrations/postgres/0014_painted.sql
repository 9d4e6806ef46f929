-- Version 14 (PostgreSQL): what a real browser showed (firsttoken browse).
-- painted_ttft_ms: the first token painted (the animation frame after the
-- answer element first showed text), ms from the request's start on the
-- clock of the network stamps; painted_ttft_ms - ttft_ms is the render lag.
-- painted: the rest, JSON {"input_lead_ms", "first_dom_ms",
-- "painted_ttft_ms", "painted_last_ms", "chunks_before_first_paint"}.
-- Both NULL for a request an HTTP client sent.
ALTER TABLE samples ADD COLUMN painted_ttft_ms DOUBLE PRECISION;
ALTER TABLE samples ADD COLUMN painted JSONB;
