//! Loading a selection: sessions (or a run) → frame, spans, rows.
//!
//! Each session's frame is filled from the store one row at a time
//! ([`Store::scan_views_parts`]): a report over a million samples holds
//! the frame (~180 bytes a row) and never a million row objects. A large
//! session is read in two halves at once, each into a clone of the empty
//! builder, joined in order ([`FrameBuilder::append`]). A large finished
//! session's frame is then stored as bytes beside its samples, and read
//! from there while its samples stay the same ([`STORED_FRAME_MIN_ROWS`],
//! [`firsttoken_analyze::StoredFrame`]). Whole rows
//! are read only where a figure needs them: the counted samples whose
//! trace id a stored span carries (the span join), and, when asked, the
//! counted successful samples (the HTML page plots single requests).

use std::collections::{BTreeMap, HashSet};

use firsttoken_analyze::{
    AnalyzeError, Frame, FrameBuilder, STORED_FRAME_FORMAT, Settings, StoredFrame,
};
use firsttoken_record::EngineScrape;
use firsttoken_record::run::RunView;
use firsttoken_record::session::{SampleRow, SessionMeta, SessionStatus};
use firsttoken_record::span::SpanRow;
use firsttoken_record::store::{FrameStamp, PARALLEL_MIN_ROWS, SampleFilter, Store};

use crate::ReadError;
use crate::run::{self, Counted};

/// What to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// These sessions, by id or unique prefix, in this order; none: every
    /// session in the store, newest first.
    Sessions(Vec<String>),
    /// The sessions of a run across agents, each planned request counted
    /// once (see [`crate::run`]).
    Run(String),
}

impl Selection {
    /// Every session in the store.
    pub fn every_session() -> Selection {
        Selection::Sessions(Vec::new())
    }
}

/// What to read besides the frame, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Also keep the counted, successful samples as whole rows
    /// ([`Loaded::rows`]), for plots of single requests.
    pub rows: bool,
    /// Sessions of at least this many samples are read from their stored
    /// frame, and store one when it is missing or stale (see
    /// [`STORED_FRAME_MIN_ROWS`]); `None`: every frame read from its rows,
    /// none stored.
    pub stored_frames_from: Option<u64>,
}

impl Default for LoadOptions {
    /// No rows; stored frames from [`STORED_FRAME_MIN_ROWS`] samples.
    fn default() -> LoadOptions {
        LoadOptions {
            rows: false,
            stored_frames_from: Some(STORED_FRAME_MIN_ROWS),
        }
    }
}

/// The server spans of the sessions that have any, with what their join
/// needs (see [`firsttoken_analyze::SpanInput`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpanData {
    /// The sessions that have spans: their requests are joined.
    pub sessions: Vec<String>,
    /// Their counted samples whose trace id some span carries.
    pub rows: Vec<SampleRow>,
    /// The spans.
    pub spans: Vec<SpanRow>,
    /// The span groups of the sessions' configs (see [`crate::span_groups`]).
    pub groups: BTreeMap<String, String>,
}

/// What was loaded.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Sessions, in the order asked (a run's: oldest first).
    pub sessions: Vec<SessionMeta>,
    /// Every counted-in sample (warm-ups included) as a compact table.
    pub frame: Frame,
    /// The counted, successful samples as whole rows, when
    /// [`LoadOptions::rows`] asked for them; else empty.
    pub rows: Vec<SampleRow>,
    /// The server spans and what their join needs.
    pub spans: SpanData,
    /// The run, for [`Selection::Run`].
    pub run: Option<RunView>,
    /// The engine's metrics each session read before and after its
    /// requests (`[engine] metrics_url`).
    pub scrapes: Vec<EngineScrape>,
    /// The rows of browser-measured sessions (`firsttoken browse
    /// --store`), whole: their paint stamps (few rows: a browser is slow).
    pub painted: Vec<SampleRow>,
}

impl Loaded {
    /// The analysis settings of these sessions (seed, level, threshold).
    pub fn settings(&self) -> Settings {
        firsttoken_analyze::settings_for(&self.sessions)
    }
}

/// The sessions `ids` name (id or unique prefix), in that order; none:
/// every session, newest first. Refuses an unknown id and an empty store.
pub async fn select_sessions(store: &Store, ids: &[String]) -> Result<Vec<SessionMeta>, ReadError> {
    let sessions = if ids.is_empty() {
        store.sessions().await?
    } else {
        let mut v = Vec::with_capacity(ids.len());
        for id in ids {
            v.push(
                store
                    .session(id)
                    .await?
                    .ok_or_else(|| ReadError::NoSession { id: id.clone() })?,
            );
        }
        v
    };
    if sessions.is_empty() {
        return Err(ReadError::NoSessions);
    }
    Ok(sessions)
}

/// Load `selection` from `store`.
pub async fn load(
    store: &Store,
    selection: &Selection,
    options: LoadOptions,
) -> Result<Loaded, ReadError> {
    match selection {
        Selection::Sessions(ids) => {
            let sessions = select_sessions(store, ids).await?;
            read(store, sessions, None, options).await
        }
        Selection::Run(id) => {
            let (view, counted) = run::load(store, id).await?;
            if view.members.is_empty() {
                return Err(ReadError::RunEmpty { run: id.clone() });
            }
            let sessions = view.members.iter().map(|(_, s)| s.clone()).collect();
            let mut loaded = read(store, sessions, Some(&counted), options).await?;
            loaded.run = Some(view);
            Ok(loaded)
        }
    }
}

/// A part of one session's frame being read, keeping only `keep`'s samples.
struct Fold {
    builder: FrameBuilder,
    keep: Option<HashSet<(u64, bool)>>,
    /// The first row analysis refused; the rest are skipped.
    refused: Option<AnalyzeError>,
}

/// Sessions with fewer samples are read from their rows every time: their
/// stored frame would save little (see [`session_frame`]).
pub const STORED_FRAME_MIN_ROWS: u64 = PARALLEL_MIN_ROWS;

/// Session `s`'s frame (only `keep`'s samples, when given). A session of
/// at least `from` samples ([`LoadOptions::stored_frames_from`]) read whole is read from its
/// stored frame when the store holds one made from its samples as they are
/// now; otherwise from its rows, and then, unless it is still running, its
/// frame is stored for the next reader. A store that cannot take it (read
/// only, busy, full) is left as it was: the frame read from the rows is
/// the same either way.
async fn session_frame(
    store: &Store,
    s: &SessionMeta,
    keep: Option<&HashSet<(u64, bool)>>,
    from: Option<u64>,
) -> Result<FrameBuilder, ReadError> {
    let stamp = match (keep, from) {
        // A run keeps some of a session's rows: those are read.
        (Some(_), _) | (_, None) => None,
        (None, Some(from)) => store
            .frame_stamp(&s.id, STORED_FRAME_FORMAT)
            .await?
            .filter(|st| st.samples >= from),
    };
    if let Some(stamp) = stamp
        && let Some(stored) = stored_frame(store, &s.id, stamp).await?
    {
        return Ok(stored);
    }
    let frame = scan_frame(store, s, keep).await?;
    if let Some(stamp) = stamp
        && s.status != SessionStatus::Running
        && frame.len() as u64 == stamp.samples
    {
        let _ = store
            .put_stored_frame(&s.id, stamp, frame.stored_chunks())
            .await;
    }
    Ok(frame)
}

/// The frame stored for `id` under `stamp`, whole; `None` when there is
/// none, or it is not whole or not readable (then the rows are read).
async fn stored_frame(
    store: &Store,
    id: &str,
    stamp: FrameStamp,
) -> Result<Option<FrameBuilder>, ReadError> {
    let Some(head) = store.stored_frame_chunk(id, stamp, 0).await? else {
        return Ok(None);
    };
    let Ok(mut frame) = StoredFrame::new(&head) else {
        return Ok(None);
    };
    if frame.rows() != stamp.samples {
        return Ok(None);
    }
    // Chunks 1, 2, … until every row arrived: a missing one ends it.
    let mut k = 1;
    while !frame.is_whole() {
        let Some(chunk) = store.stored_frame_chunk(id, stamp, k).await? else {
            return Ok(None);
        };
        if frame.add(&chunk).is_err() {
            return Ok(None);
        }
        k += 1;
    }
    Ok(frame.finish().ok())
}

/// Session `s`'s frame read from its rows (only `keep`'s): a large session
/// in two parts at once, each into a clone of the empty builder, joined in
/// order.
async fn scan_frame(
    store: &Store,
    s: &SessionMeta,
    keep: Option<&HashSet<(u64, bool)>>,
) -> Result<FrameBuilder, ReadError> {
    let empty = FrameBuilder::new(std::slice::from_ref(s))?;
    let part = || Fold {
        builder: empty.clone(),
        keep: keep.cloned(),
        refused: None,
    };
    let mut parts = store
        .scan_views_parts(&s.id, PARALLEL_MIN_ROWS, part(), part, |f, v| {
            if f.refused.is_some()
                || f.keep
                    .as_ref()
                    .is_some_and(|k| !k.contains(&(v.seq, v.warmup)))
            {
                return Ok(());
            }
            if let Err(e) = f.builder.push_view(v) {
                f.refused = Some(e);
            }
            Ok(())
        })
        .await?
        .into_iter();
    let mut fold = parts.next().expect("the scan gives the first part back");
    for part in parts {
        if fold.refused.is_none() {
            fold.refused = part.refused;
        }
        fold.builder.append(part.builder);
    }
    match fold.refused {
        Some(e) => Err(e.into()),
        None => Ok(fold.builder),
    }
}

/// Sessions → frame (every session's samples, or `counted`'s), spans and
/// the rows that are needed whole.
async fn read(
    store: &Store,
    sessions: Vec<SessionMeta>,
    counted: Option<&Counted>,
    options: LoadOptions,
) -> Result<Loaded, ReadError> {
    let mut frame = FrameBuilder::new(&sessions)?;
    let mut spans = SpanData {
        groups: crate::span_groups(&sessions),
        ..SpanData::default()
    };
    let mut rows = Vec::new();
    let mut scrapes = Vec::new();
    let mut painted = Vec::new();
    for s in &sessions {
        let keep = counted.map(|c| c.of(&s.id));
        let kept =
            |r: &SampleRow| keep.is_none_or(|k| k.contains(&(r.sample.seq, r.sample.warmup)));
        frame.append(session_frame(store, s, keep, options.stored_frames_from).await?);
        // Sessions without spans (no receiver, or nothing arrived) stay out
        // of the join: "no span" would be noise there.
        if store.span_count(&s.id).await? > 0 {
            spans.spans.extend(store.spans(&s.id).await?);
            spans.sessions.push(s.id.clone());
            let mut joined = store
                .samples_where(&s.id, SampleFilter::CountedWithSpans)
                .await?;
            joined.retain(kept);
            spans.rows.extend(joined);
        }
        scrapes.extend(store.engine_scrapes(&s.id).await?);
        // A browser session, or a session with browser phases: its
        // messages carry the paints.
        let browser_phases = s
            .spec
            .get("browser_planned")
            .and_then(serde_json::Value::as_u64)
            .is_some_and(|n| n > 0);
        if s.spec.get("browse").is_some() || browser_phases {
            let mut all = store.samples(&s.id).await?;
            all.retain(|r| kept(r) && r.sample.painted.is_some());
            painted.extend(all);
        }
        if options.rows {
            let mut ok = store.samples_where(&s.id, SampleFilter::CountedOk).await?;
            ok.retain(kept);
            rows.extend(ok);
        }
    }
    Ok(Loaded {
        sessions,
        frame: frame.finish(),
        rows,
        spans,
        run: None,
        scrapes,
        painted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{meta, put, rows, spread, store};
    use firsttoken_analyze::PhaseKind::Warm;
    use firsttoken_record::UtcTime;
    use firsttoken_record::run::{RunInfo, RunMember};
    use firsttoken_record::session::Provenance::Measured;

    fn ids(sessions: &[SessionMeta]) -> Vec<&str> {
        sessions.iter().map(|s| s.id.as_str()).collect()
    }

    /// `id` started `minute` minutes into the day.
    fn at_minute(id: &str, minute: u32) -> SessionMeta {
        let started: UtcTime = format!("2026-12-01T00:{minute:02}:00Z").parse().unwrap();
        SessionMeta {
            started_at: started,
            ..meta(id, "v1", Measured)
        }
    }

    #[tokio::test]
    async fn sessions_are_selected_in_the_order_asked_or_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let e = select_sessions(&store, &[]).await.unwrap_err();
        assert!(matches!(e, ReadError::NoSessions), "{e}");
        put(&store, &at_minute("20261201T0001-old", 1), &[]).await;
        put(&store, &at_minute("20261201T0002-new", 2), &[]).await;
        let every = select_sessions(&store, &[]).await.unwrap();
        assert_eq!(ids(&every), ["20261201T0002-new", "20261201T0001-old"]);
        // By id or unique prefix, in the order given.
        let asked = ["20261201T0001".to_string(), "20261201T0002-new".to_string()];
        let picked = select_sessions(&store, &asked).await.unwrap();
        assert_eq!(ids(&picked), ["20261201T0001-old", "20261201T0002-new"]);
        let e = select_sessions(&store, &["nope".to_string()])
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "no session \"nope\" in the store");
    }

    /// A run's segment 0 ran its four requests, then a rerun repeated the
    /// last two: the frame holds each planned request once, the rerun's
    /// copy of the repeated ones (the newest session's), and a session's
    /// selection by id holds all of its rows.
    #[tokio::test]
    async fn a_run_counts_each_planned_request_once_from_the_newest_session() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let run = RunInfo {
            run_id: "r".into(),
            created_at: crate::testutil::at(),
            segments: 1,
            planned_requests: 4,
            config_hash: "h".into(),
            start_at: None,
        };
        store.join_run(&run).await.unwrap();
        let member = |session: &str, range: std::ops::Range<u64>| RunMember {
            session_id: session.into(),
            run_id: "r".into(),
            segment: 0,
            segments: 1,
            segment_requests: 4,
            ranges: std::iter::once(range).collect(),
            clock: None,
            began_at_ms: None,
            heartbeat_at_ms: None,
            heartbeat_every_ms: None,
        };
        // The first session's requests 2 and 3 were slow (the reason for
        // the rerun); the rerun's took 100 ms.
        let first = at_minute("s1-first", 1);
        put(
            &store,
            &first,
            &rows(
                "s1-first",
                Measured,
                (Warm, "chat"),
                0,
                [100.0, 100.0, 900.0, 900.0],
            ),
        )
        .await;
        store
            .add_run_member(&member("s1-first", 0..4))
            .await
            .unwrap();
        let rerun = at_minute("s2-rerun", 2);
        put(
            &store,
            &rerun,
            &rows("s2-rerun", Measured, (Warm, "chat"), 0, spread(100.0, 2)),
        )
        .await;
        store
            .add_run_member(&member("s2-rerun", 2..4))
            .await
            .unwrap();

        let loaded = load(
            &store,
            &Selection::Run("r".into()),
            LoadOptions {
                rows: true,
                ..LoadOptions::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(
            ids(&loaded.sessions),
            ["s1-first", "s2-rerun"],
            "oldest first"
        );
        assert_eq!(loaded.frame.len(), 4, "each planned request once");
        let mut kept: Vec<(String, u64)> = loaded
            .rows
            .iter()
            .map(|r| (r.session_id.clone(), r.sample.seq))
            .collect();
        kept.sort();
        assert_eq!(
            kept,
            [
                ("s1-first".to_string(), 0),
                ("s1-first".to_string(), 1),
                ("s2-rerun".to_string(), 0),
                ("s2-rerun".to_string(), 1)
            ]
        );
        assert!(
            loaded
                .rows
                .iter()
                .all(|r| r.sample.ttft_ms.unwrap() < 200.0)
        );
        assert_eq!(loaded.run.as_ref().map(|r| r.counted), Some(4));
        // The sessions on their own: every row.
        let both = Selection::Sessions(vec!["s1-first".into(), "s2-rerun".into()]);
        let loaded = load(&store, &both, LoadOptions::default()).await.unwrap();
        assert_eq!(loaded.frame.len(), 6);
        assert!(loaded.rows.is_empty(), "rows only when asked for");
        assert!(loaded.run.is_none());
        let e = load(
            &store,
            &Selection::Run("nope".into()),
            LoadOptions::default(),
        )
        .await
        .unwrap_err();
        assert!(matches!(e, ReadError::NoRun { .. }), "{e}");
    }
}
