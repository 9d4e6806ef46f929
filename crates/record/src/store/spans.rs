//! Server-side spans in the store (schema version 5): the `spans` table,
//! next to the samples of their session and joined to them by trace id.
//!
//! A session keeps at most a cap of spans ([`MAX_SPANS_PER_SESSION`], or a
//! smaller one the caller configures): [`Store::append_spans`] stores a
//! batch up to the cap and counts the rest as refused, so a chatty app
//! cannot grow the store without bound. The same span (session, trace id,
//! span id) sent twice — an exporter retrying — is stored once and counted
//! as a duplicate. Attribute values under secret-looking keys
//! (authorization, api key, token, cookie, password…) and passwords in
//! URL-like values are redacted before storing, in span and event
//! attributes alike: an app may record the client's `Authorization` header.

use std::collections::BTreeMap;

use serde_json::Value;

use super::redact::redact_spec;
use super::schema::{Cell, RowGet};
use super::sessions::SESSION_FOUND_SQL;
use super::sql::{insert_rows_sql, retry_once};
use super::{Store, StoreError};
use crate::span::{MAX_SPANS_PER_SESSION, SpanEvent, SpanKind, SpanRow, is_trace_id};

/// The `spans` columns (all but the row id), in storage order.
pub const SPAN_COLUMNS: [&str; 12] = [
    "session_id",
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "service",
    "start_unix_nano",
    "end_unix_nano",
    "error",
    "attributes",
    "events",
];

/// What one [`Store::append_spans`] did with its batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpansAppended {
    /// Spans stored now.
    pub stored: u64,
    /// Spans not stored because the session had reached its span cap.
    pub refused: u64,
    /// Spans already stored (same session, trace id and span id).
    pub duplicate: u64,
}

impl SpansAppended {
    /// Adds another batch's counts.
    pub fn add(&mut self, other: SpansAppended) {
        self.stored += other.stored;
        self.refused += other.refused;
        self.duplicate += other.duplicate;
    }
}

/// True for 16 lowercase hex digits, not all zero: a W3C span id.
pub fn is_span_id(s: &str) -> bool {
    s.len() == 16
        && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && s.bytes().any(|b| b != b'0')
}

/// `attrs` with secret-looking values redacted (see [`redact_spec`]).
fn redacted(attrs: &BTreeMap<String, Value>) -> Value {
    let mut v = Value::Object(attrs.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    redact_spec(&mut v);
    v
}

fn nanos(name: &str, v: u64) -> Result<Cell, String> {
    i64::try_from(v)
        .map(Cell::Int)
        .map_err(|_| format!("{name} = {v} does not fit a signed 64-bit column"))
}

/// A span as cells in [`SPAN_COLUMNS`] order, secrets redacted. Refuses
/// malformed ids and times that would not read back the same.
pub(crate) fn span_cells(s: &SpanRow) -> Result<Vec<Cell>, String> {
    if !is_trace_id(&s.trace_id) {
        return Err(format!(
            "span trace_id {:?} is not 32 lowercase hex digits (not all zero)",
            s.trace_id
        ));
    }
    if !is_span_id(&s.span_id) {
        return Err(format!(
            "span_id {:?} is not 16 lowercase hex digits (not all zero)",
            s.span_id
        ));
    }
    if let Some(p) = s.parent_span_id.as_deref().filter(|p| !is_span_id(p)) {
        return Err(format!(
            "parent_span_id {p:?} is not 16 lowercase hex digits (not all zero)"
        ));
    }
    let events: Vec<Value> = s
        .events
        .iter()
        .map(|e| {
            let mut v = serde_json::json!({
                "name": e.name,
                "time_unix_nano": e.time_unix_nano,
            });
            if !e.attributes.is_empty() {
                v["attributes"] = redacted(&e.attributes);
            }
            v
        })
        .collect();
    Ok(vec![
        Cell::Text(s.session_id.clone()),
        Cell::Text(s.trace_id.clone()),
        Cell::Text(s.span_id.clone()),
        s.parent_span_id
            .as_ref()
            .map_or(Cell::Null, |p| Cell::Text(p.clone())),
        Cell::Text(s.name.clone()),
        Cell::Text(s.kind.as_str().into()),
        s.service
            .as_ref()
            .map_or(Cell::Null, |p| Cell::Text(p.clone())),
        nanos("start_unix_nano", s.start_unix_nano)?,
        nanos("end_unix_nano", s.end_unix_nano)?,
        Cell::Bool(s.error),
        Cell::Json(redacted(&s.attributes)),
        Cell::Json(Value::Array(events)),
    ])
}

/// A span from a row holding every [`SPAN_COLUMNS`] column.
pub(crate) fn span_from(r: &impl RowGet) -> Result<SpanRow, String> {
    let kind_text = r.text("kind")?;
    let kind = SpanKind::parse(&kind_text);
    if kind == SpanKind::Unspecified && kind_text != "unspecified" {
        return Err(format!("kind: unknown value {kind_text:?}"));
    }
    let time = |col: &str| -> Result<u64, String> {
        let v = r.opt_i64(col)?.ok_or_else(|| format!("{col} is NULL"))?;
        u64::try_from(v).map_err(|_| format!("{col} = {v} is negative"))
    };
    let attributes = match r.opt_json("attributes")? {
        Some(Value::Object(m)) => m.into_iter().collect(),
        Some(Value::Null) | None => BTreeMap::new(),
        Some(other) => return Err(format!("attributes: not an object: {other}")),
    };
    let events: Vec<SpanEvent> = r.typed_json("events")?.unwrap_or_default();
    Ok(SpanRow {
        session_id: r.text("session_id")?,
        trace_id: r.text("trace_id")?,
        span_id: r.text("span_id")?,
        parent_span_id: r.opt_text("parent_span_id")?,
        name: r.text("name")?,
        kind,
        service: r.opt_text("service")?,
        start_unix_nano: time("start_unix_nano")?,
        end_unix_nano: time("end_unix_nano")?,
        error: r.bool("error")?,
        attributes,
        events,
    })
}

impl Store {
    /// Stores a batch of spans of session `session_id` in one transaction,
    /// as long as the session holds fewer than `cap` spans (`cap` is
    /// bounded by [`MAX_SPANS_PER_SESSION`]); the rest of the batch is
    /// counted as refused. A span already stored is counted as a
    /// duplicate. Secret-looking attribute values are redacted first.
    /// Every span must name `session_id`; an unknown session is
    /// [`StoreError::NoSession`]; a malformed span refuses the whole batch.
    pub async fn append_spans(
        &self,
        session_id: &str,
        spans: &[SpanRow],
        cap: usize,
    ) -> Result<SpansAppended, StoreError> {
        let op = "append spans";
        if let Some(s) = spans.iter().find(|s| s.session_id != session_id) {
            return Err(self.invalid(
                op,
                format!(
                    "a span of session {:?} was given with session {session_id:?}",
                    s.session_id
                ),
            ));
        }
        let rows = spans
            .iter()
            .map(span_cells)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| self.invalid(op, m))?;
        let cap = u64::try_from(cap.min(MAX_SPANS_PER_SESSION)).unwrap_or(u64::MAX);
        // A retry after a lost commit finds the batch's spans stored:
        // counted as duplicates, never stored twice.
        retry_once!(self, |_retry| self
            .append_spans_once(session_id, &rows, cap)
            .await)
    }

    /// One transaction: the cap check and the inserts see the same count.
    async fn append_spans_once(
        &self,
        session_id: &str,
        rows: &[Vec<Cell>],
        cap: u64,
    ) -> Result<SpansAppended, StoreError> {
        let op = "append spans";
        let id = || vec![Cell::Text(session_id.to_owned())];
        let mut tx = self.begin(op).await?;
        if let Some(lock) = self.dialect().spans_lock {
            tx.exec(lock, id()).await?;
        }
        if tx
            .query(SESSION_FOUND_SQL, id(), |_| Ok(()))
            .await?
            .is_empty()
        {
            return self
                .no_session_if_zero(0, op, session_id)
                .map(|()| SpansAppended::default());
        }
        let have = tx
            .query(
                "SELECT count(*) AS n FROM spans WHERE session_id = $1",
                id(),
                |r| r.u64("n"),
            )
            .await?;
        let mut room = cap.saturating_sub(have.first().copied().unwrap_or(0));
        let mut out = SpansAppended::default();
        let sql = insert_rows_sql(
            "spans",
            &SPAN_COLUMNS,
            1,
            "ON CONFLICT (session_id, trace_id, span_id) DO NOTHING",
        );
        for cells in rows {
            if room == 0 {
                out.refused += 1;
                continue;
            }
            if tx.exec(&sql, cells.clone()).await? == 1 {
                out.stored += 1;
                room -= 1;
            } else {
                out.duplicate += 1;
            }
        }
        tx.commit().await?;
        Ok(out)
    }

    /// A session's spans, in start order.
    pub async fn spans(&self, session_id: &str) -> Result<Vec<SpanRow>, StoreError> {
        let sql = format!(
            "SELECT {} FROM spans WHERE session_id = $1 ORDER BY start_unix_nano, id",
            SPAN_COLUMNS.join(", ")
        );
        self.query(
            "read spans",
            &sql,
            vec![Cell::Text(session_id.to_owned())],
            |r| span_from(&r),
        )
        .await
    }

    /// Folds a session's spans, in start order, into `state` as they are
    /// read, in bounded memory (see [`Store::scan_samples`]).
    pub async fn scan_spans<S, F>(
        &self,
        session_id: &str,
        state: S,
        mut f: F,
    ) -> Result<S, StoreError>
    where
        F: FnMut(&mut S, SpanRow) -> Result<(), String>,
    {
        let table = ("spans", &SPAN_COLUMNS[..], &["attributes", "events"][..]);
        let order = "start_unix_nano, id";
        self.scan_session(
            "read spans",
            session_id,
            table,
            order,
            state,
            move |st, r| f(st, span_from(r)?),
        )
        .await
    }

    /// How many spans a session holds.
    pub async fn span_count(&self, session_id: &str) -> Result<u64, StoreError> {
        let n = self
            .query(
                "count spans",
                "SELECT count(*) AS n FROM spans WHERE session_id = $1",
                vec![Cell::Text(session_id.to_owned())],
                |r| r.u64("n"),
            )
            .await?;
        Ok(n.first().copied().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_attributes_and_events_are_redacted() {
        let mut s = SpanRow::new(
            "s",
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "00f067aa0ba902b7",
            "POST /chat",
        );
        s.attributes.insert(
            "http.request.header.authorization".into(),
            serde_json::json!(["Bearer sk-live-1"]),
        );
        s.attributes.insert(
            "db.connection_string".into(),
            "postgres://u:hunter2@db/x".into(),
        );
        s.attributes
            .insert("gen_ai.usage.output_tokens".into(), 12.into());
        s.events.push(SpanEvent {
            name: "e".into(),
            time_unix_nano: 5,
            attributes: [("api_key".to_string(), Value::from("k-1"))].into(),
        });
        let cells = span_cells(&s).unwrap();
        let Cell::Json(attrs) = &cells[10] else {
            panic!()
        };
        assert_eq!(
            attrs["http.request.header.authorization"],
            super::super::REDACTED
        );
        assert_eq!(attrs["db.connection_string"], "postgres://u:***@db/x");
        assert_eq!(attrs["gen_ai.usage.output_tokens"], 12);
        let Cell::Json(events) = &cells[11] else {
            panic!()
        };
        assert_eq!(events[0]["attributes"]["api_key"], super::super::REDACTED);
        assert!(!format!("{cells:?}").contains("sk-live"));
    }

    #[test]
    fn malformed_ids_are_refused() {
        let good = SpanRow::new(
            "s",
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "00f067aa0ba902b7",
            "x",
        );
        assert!(span_cells(&good).is_ok());
        let mut bad = good.clone();
        bad.span_id = "0000000000000000".into();
        assert!(span_cells(&bad).is_err());
        let mut bad = good.clone();
        bad.trace_id = "4BF92F3577B34DA6A3CE929D0E0E4736".into();
        assert!(span_cells(&bad).is_err());
        let mut bad = good;
        bad.parent_span_id = Some("xyz".into());
        assert!(span_cells(&bad).is_err());
    }
}
