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
    assert!(super::super::spill_sample(&row(&sample), &mut Vec::new()).is_ok());
    sample.ttft_ms = Some(f64::NAN);
    let refused = sample_cells(&row(&sample)).unwrap_err();
    assert_eq!(
        super::super::spill_sample(&row(&sample), &mut Vec::new()).unwrap_err(),
        refused
    );
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

/// `CHECK (col = 'a' OR col = 'b' …)` over `names`.
fn chain(col: &str, names: &[&str]) -> String {
    let eqs: Vec<String> = names.iter().map(|n| format!("{col} = '{n}'")).collect();
    format!("CHECK ({})", eqs.join(" OR "))
}

#[test]
fn sqlite_checks_phase_and_provenance_as_chains_of_the_vocabulary() {
    use crate::session::Provenance::{Emulated, Imported, Measured, Synthetic};
    // The latest SQLite migration that writes them (version 18 first).
    let v18 = SQLITE_MIGRATIONS
        .iter()
        .rev()
        .find(|m| m.1.contains("CHECK (phase = "))
        .unwrap()
        .1;
    let phases = PhaseKind::ALL.map(PhaseKind::as_str);
    assert!(v18.contains(&chain("phase", &phases)), "{v18}");
    let provenances = [Measured, Emulated, Imported, Synthetic].map(|p| p.as_str());
    assert!(v18.contains(&chain("provenance", &provenances)), "{v18}");
    // No list of more than two constants is left for SQLite to build a
    // b-tree of on every insert.
    let table = &v18[v18.find("CREATE TABLE").unwrap()..v18.find(") STRICT").unwrap()];
    for list in table.split(" IN (").skip(1) {
        let values = list[..list.find(')').unwrap()].split(',').count();
        assert!(values <= 2, "an IN list of {values}: {list}");
    }
}

/// Runs SQLite's migrations `from..=to` on `conn`, as the store does.
fn migrate_sqlite(conn: &rusqlite::Connection, from: i64, to: i64) {
    for (v, sql) in SQLITE_MIGRATIONS {
        if (from..=to).contains(v) {
            conn.execute_batch(&format!("BEGIN; {sql}; COMMIT;"))
                .unwrap_or_else(|e| panic!("version {v}: {e}"));
        }
    }
}

#[test]
fn version_18_keeps_every_row_its_id_and_the_id_counter() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.pragma_update(None, "foreign_keys", "ON").unwrap();
    migrate_sqlite(&conn, 1, 17);
    let sample = |seq: u32, phase: &str, provenance: &str| {
        format!(
            "INSERT INTO samples (session_id, seq, phase, actual_start_ms, started_at, provenance,
                                  worker, warmup, connection, content_chunks, ttft_ms, trace_id)
             VALUES ('s', {seq}, '{phase}', {seq}.0, '2026-12-06T10:00:00Z', '{provenance}',
                     0, 0, 'fresh', 3, 250.5, 't{seq}')"
        )
    };
    conn.execute_batch(&format!(
        "INSERT INTO sessions (id, started_at, status, spec, seed, tool_version, host, provenance)
             VALUES ('s', '2026-12-06T10:00:00Z', 'complete', '{{}}', '7', '0.1.0', 'h', 'measured');
         {}; {}; {}; DELETE FROM samples WHERE seq = 2;",
        sample(0, "ping", "measured"),
        sample(1, "conversation", "synthetic"),
        sample(2, "warm", "measured"),
    ))
    .unwrap();
    let rows = |conn: &rusqlite::Connection| -> Vec<(i64, u32, String, String, f64)> {
        let mut st = conn
            .prepare("SELECT id, seq, phase, provenance, ttft_ms FROM samples ORDER BY id")
            .unwrap();
        st.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    let before = rows(&conn);
    migrate_sqlite(&conn, 18, 18);
    assert_eq!(rows(&conn), before);
    // The deleted sample's id is not given again.
    conn.execute_batch(&sample(3, "cold", "imported")).unwrap();
    let id: i64 = conn
        .query_row("SELECT id FROM samples WHERE seq = 3", [], |r| r.get(0))
        .unwrap();
    assert_eq!(id, 4);
    // The checks still refuse what they refused, and the indexes are back.
    for bad in [
        sample(4, "lukewarm", "measured"),
        sample(4, "warm", "invented"),
    ] {
        let e = conn.execute_batch(&bad).unwrap_err().to_string();
        assert!(e.contains("CHECK"), "{e}");
    }
    let plan: String = conn
        .query_row(
            "EXPLAIN QUERY PLAN SELECT id FROM samples WHERE trace_id = 't1'",
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.contains("samples_trace"), "{plan}");
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}
