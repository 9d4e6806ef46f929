//! Tests of the stored schema's mapping and migrations.

use super::*;

#[test]
fn every_sample_column_appears_in_both_migrations() {
    let (v1_cols, mut later) = SAMPLE_COLUMNS.split_at(V1_SAMPLE_COLUMNS);
    let sql = |m: &[(i64, &'static str)], v: i64| m.iter().find(|m| m.0 == v).unwrap().1;
    for (version, n) in ADDED_SAMPLE_COLUMNS {
        let (cols, rest) = later.split_at(n);
        later = rest;
        for col in cols {
            for (name, m) in [
                ("sqlite", SQLITE_MIGRATIONS),
                ("postgres", POSTGRES_MIGRATIONS),
            ] {
                // Version 12 rebuilds SQLite's table (a CHECK cannot
                // change): the column is defined, not added.
                let pat = if name == "sqlite" && version == PHASE_LIST_VERSION {
                    format!("\n    {col} ")
                } else {
                    format!("ADD COLUMN {col} ")
                };
                assert!(
                    sql(m, version).contains(&pat),
                    "{name} v{version} lacks {col}"
                );
            }
        }
    }
    assert!(later.is_empty(), "columns added by no migration: {later:?}");
    for col in v1_cols.iter().chain(SESSION_COLUMNS.iter()) {
        let pat = format!("\n    {col} ");
        assert!(SQLITE_MIGRATIONS[0].1.contains(&pat), "sqlite lacks {col}");
        assert!(
            POSTGRES_MIGRATIONS[0].1.contains(&pat),
            "postgres lacks {col}"
        );
    }
    // The SQLite rebuild keeps every column, in the same order.
    let sqlite_v1 = SQLITE_MIGRATIONS[0].1;
    let samples_v1 = &sqlite_v1[sqlite_v1.find("CREATE TABLE samples").unwrap()..];
    let rebuilt = SQLITE_MIGRATIONS[1].1;
    let mut at = 0;
    for col in v1_cols {
        let pat = format!("\n    {col} ");
        assert!(samples_v1.contains(&pat), "v1 samples lacks {col}");
        let found = rebuilt[at..].find(&pat).expect(col);
        at += found + pat.len();
    }
    assert_eq!(SQLITE_MIGRATIONS.len(), POSTGRES_MIGRATIONS.len());
    for (s, p) in SQLITE_MIGRATIONS.iter().zip(POSTGRES_MIGRATIONS) {
        assert_eq!(s.0, p.0);
    }
}

#[test]
fn a_row_fills_every_sample_column_and_the_check_agrees() {
    use crate::vocab::Destination;
    let mut sample = crate::Sample::empty(1, 0, Connection::Fresh);
    let row = |sample: &crate::Sample| SampleRow {
        session_id: "s".into(),
        phase: PhaseKind::Warm,
        dest: Destination::App { path: None },
        concurrency: None,
        intended_start_ms: None,
        actual_start_ms: 1.0,
        started_at: UtcTime::from_unix_ms(0),
        provenance: Provenance::Measured,
        prompt: None,
        sample: sample.clone(),
    };
    assert_eq!(
        sample_cells(&row(&sample)).unwrap().len(),
        SAMPLE_COLUMNS.len()
    );
    assert!(sample_check(&row(&sample)).is_ok());
    sample.ttft_ms = Some(f64::NAN);
    let refused = sample_cells(&row(&sample)).unwrap_err();
    assert_eq!(sample_check(&row(&sample)).unwrap_err(), refused);
    assert!(refused.contains("ttft_ms"), "{refused}");
}

#[test]
fn the_phase_checks_list_exactly_the_vocabulary() {
    let list = format!("CHECK (phase IN ({}))", PhaseKind::sql_list());
    for m in [SQLITE_MIGRATIONS, POSTGRES_MIGRATIONS] {
        let v = m.iter().find(|m| m.0 == PHASE_LIST_VERSION).unwrap();
        assert!(v.1.contains(&list), "{}", v.1);
        // No later version changes it again without saying so here.
        assert!(
            m.iter()
                .filter(|m| m.0 > PHASE_LIST_VERSION)
                .all(|m| !m.1.contains("CHECK (phase IN")),
            "a later migration changes the phase CHECK: update PHASE_LIST_VERSION"
        );
    }
}

#[test]
fn the_engine_checks_list_exactly_the_vocabulary() {
    let names: Vec<String> = crate::EngineSource::ALL
        .iter()
        .map(|e| format!("'{}'", e.as_str()))
        .collect();
    let list = format!("IN ({}))", names.join(", "));
    for m in [SQLITE_MIGRATIONS, POSTGRES_MIGRATIONS] {
        assert!(m.iter().find(|m| m.0 == 13).unwrap().1.contains(&list));
    }
}
