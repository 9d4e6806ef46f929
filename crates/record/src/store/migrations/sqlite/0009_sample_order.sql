-- Schema version 9: a session's samples in the order every reader takes
-- them (actual start, then storage order) straight from one index, so a
-- scan of a session needs no sort; it replaces the (session_id,
-- actual_start_ms) index, which it covers.
CREATE INDEX samples_session_order ON samples (session_id, actual_start_ms, id);
DROP INDEX samples_session_id;
