//! Loading a selection: sessions (or a run) → frame, spans, rows.
//!
//! The frame is filled from the store one row at a time
//! ([`Store::scan_views`]): a report over a million samples holds the
//! frame (~150 bytes a row) and never a million row objects. Whole rows
//! are read only where a figure needs them: the counted samples whose
//! trace id a stored span carries (the span join), and, when asked, the
//! counted successful samples (the HTML page plots single requests).

use std::collections::{BTreeMap, HashSet};

use firsttoken_analyze::{AnalyzeError, Frame, FrameBuilder, Settings};
use firsttoken_record::run::RunView;
use firsttoken_record::session::{SampleRow, SessionMeta};
use firsttoken_record::span::SpanRow;
use firsttoken_record::store::{SampleFilter, Store};

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

/// What to read besides the frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Also keep the counted, successful samples as whole rows
    /// ([`Loaded::rows`]), for plots of single requests.
    pub rows: bool,
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

/// The frame of one session folded in, keeping only `keep`'s samples.
struct Fold {
    builder: FrameBuilder,
    keep: Option<HashSet<(u64, bool)>>,
    /// The first row analysis refused; the rest are skipped.
    refused: Option<AnalyzeError>,
}

/// Sessions → frame (every session's samples, or `counted`'s), spans and
/// the rows that are needed whole.
async fn read(
    store: &Store,
    sessions: Vec<SessionMeta>,
    counted: Option<&Counted>,
    options: LoadOptions,
) -> Result<Loaded, ReadError> {
    let mut fold = Fold {
        builder: FrameBuilder::new(&sessions)?,
        keep: None,
        refused: None,
    };
    let mut spans = SpanData {
        groups: crate::span_groups(&sessions),
        ..SpanData::default()
    };
    let mut rows = Vec::new();
    for s in &sessions {
        let keep = counted.map(|c| c.of(&s.id));
        let kept =
            |r: &SampleRow| keep.is_none_or(|k| k.contains(&(r.sample.seq, r.sample.warmup)));
        fold.keep = keep.cloned();
        fold = store
            .scan_views(&s.id, fold, |f, v| {
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
            .await?;
        if let Some(e) = fold.refused.take() {
            return Err(e.into());
        }
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
        if options.rows {
            let mut ok = store.samples_where(&s.id, SampleFilter::CountedOk).await?;
            ok.retain(kept);
            rows.extend(ok);
        }
    }
    Ok(Loaded {
        sessions,
        frame: fold.builder.finish(),
        rows,
        spans,
        run: None,
    })
}
