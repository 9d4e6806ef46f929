-- Version 2 (PostgreSQL): the phase column refuses names outside the
-- vocabulary (firsttoken_record::vocab::PhaseKind). Adding the constraint
-- validates existing rows; the store first refuses to migrate (naming them)
-- if rows hold unknown phases.
ALTER TABLE samples ADD CONSTRAINT samples_phase_known
    CHECK (phase IN ('ping', 'cold', 'warm', 'fresh', 'direct', 'concurrency', 'rate'));
