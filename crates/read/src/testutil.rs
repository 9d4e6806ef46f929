//! Sessions, rows and stores for the reading side's tests.

use firsttoken_analyze::{Frame, PhaseKind};
use firsttoken_record::session::{Labels, Provenance, SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::{Connection, Destination, Sample, Store, UtcTime};

/// When every test session starts.
pub fn at() -> UtcTime {
    "2026-12-01T00:00:00Z".parse().expect("a valid timestamp")
}

/// A complete session `id` of code version `version` and `provenance`,
/// seed 1.
pub fn meta(id: &str, version: &str, provenance: Provenance) -> SessionMeta {
    SessionMeta {
        status: SessionStatus::Complete,
        seed: 1,
        labels: Labels {
            code_version: version.into(),
            ..Labels::default()
        },
        ..SessionMeta::new(id, at(), provenance)
    }
}

/// A successful request of `session` in `phase` on app path `path`, its
/// TTFT `ttft` ms, sample number `seq`.
pub fn row(
    session: &str,
    provenance: Provenance,
    (phase, path): (PhaseKind, &str),
    seq: u64,
    ttft: f64,
) -> SampleRow {
    let mut sample = Sample::empty(seq, 0, Connection::Reused);
    sample.ttft_ms = Some(ttft);
    let dest = Destination::App {
        path: Some(path.into()),
    };
    SampleRow {
        provenance,
        ..SampleRow::new(session, phase, dest, at(), sample)
    }
}

/// Requests of `session` in `phase` on `path`, one per TTFT of `ttfts`,
/// numbered from `first`.
pub fn rows(
    session: &str,
    provenance: Provenance,
    place: (PhaseKind, &str),
    first: u64,
    ttfts: impl IntoIterator<Item = f64>,
) -> Vec<SampleRow> {
    ttfts
        .into_iter()
        .zip(first..)
        .map(|(t, seq)| row(session, provenance, place, seq, t))
        .collect()
}

/// Measured warm requests, per `(session, path, base, n)` `n` of them
/// with TTFTs [`spread`] from `base` ms, numbered per session in order.
pub fn warm(groups: &[(&str, &str, f64, u32)]) -> Vec<SampleRow> {
    let mut next: std::collections::HashMap<&str, u64> = Default::default();
    let mut out = Vec::new();
    for &(session, path, base, n) in groups {
        let first = next.entry(session).or_default();
        out.extend(rows(
            session,
            Provenance::Measured,
            (PhaseKind::Warm, path),
            *first,
            spread(base, n),
        ));
        *first += u64::from(n);
    }
    out
}

/// `n` TTFTs spread evenly over 20 ms from `base`.
pub fn spread(base: f64, n: u32) -> Vec<f64> {
    (0..n).map(|i| base + f64::from(i % 20)).collect()
}

/// The frame of `rows` of `sessions`.
pub fn frame(sessions: &[SessionMeta], rows: &[SampleRow]) -> Frame {
    Frame::from_rows(rows, sessions).expect("valid test rows")
}

/// A new SQLite store in `dir`.
pub async fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("s.db").display().to_string())
        .await
        .expect("a SQLite store")
}

/// `meta` and its `rows` stored.
pub async fn put(store: &Store, meta: &SessionMeta, rows: &[SampleRow]) {
    store.create_session(meta).await.expect("the session row");
    for r in rows {
        store.append_sample(r).await.expect("the sample");
    }
}
