-- Version 13 (SQLite): the inference engine's own timing of a request,
-- read from its stream (issue 28).
-- engine: JSON {"source", "prompt_n", "prompt_ms", "predicted_n",
-- "predicted_ms", "cache_n"} (see crate::engine), its source CHECKed
-- against the known engines; NULL when the stream carried none.
ALTER TABLE samples ADD COLUMN engine TEXT CHECK (engine IS NULL OR (json_valid(engine) AND json_extract(engine, '$.source') IN ('llama_cpp')));
