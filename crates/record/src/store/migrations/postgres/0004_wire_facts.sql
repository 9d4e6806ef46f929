-- Version 4 (PostgreSQL): what the wire said beyond the stamps of version 1.
-- proxy_ms: the proxy's CONNECT answered (a phase of its own);
-- content_encoding: the response's Content-Encoding, NULL for identity;
-- retried_stale: the reused connection was found closed and the request
-- went again on a new one; prompt_index/prompt_hash: which prompt it carried.
ALTER TABLE samples ADD COLUMN proxy_ms DOUBLE PRECISION;
ALTER TABLE samples ADD COLUMN content_encoding TEXT;
ALTER TABLE samples ADD COLUMN retried_stale BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE samples ADD COLUMN prompt_index BIGINT;
ALTER TABLE samples ADD COLUMN prompt_hash TEXT;
