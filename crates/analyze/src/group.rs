//! Grouping rows by any of ten keys. Provenance is always part of the key,
//! so measured, emulated, imported and synthetic numbers never pool.
//!
//! **The one pooling rule** of every TTFT table ([`headline_keys`]): groups
//! that behave differently never pool unlabelled. Phases never pool (the
//! warm phase is the headline row, the others have rows of their own), so
//! app and direct requests never pool either (direct requests are their
//! own phase); concurrency levels and direct strategies have rows of their
//! own; paths and code versions pool only when the keys leave them out,
//! and each group then names what it pools (`PooledGroup::pools`).
//!
//! `network`, `code_version` and `vantage` come from the session's labels;
//! `day` is the UTC date of the row's own `started_at`; the rest from the
//! row. Groups come out ordered by their key values in key order: text
//! alphabetically, `day` chronologically, `phase` headline first (warm,
//! fresh, concurrency, rate, conversation, cold, direct, ping), `concurrency`
//! numerically, missing values first.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use firsttoken_record::session::Provenance;
use serde::Serialize;
use serde::ser::SerializeMap;

use crate::frame::{Frame, FxBuild, Metric, NONE, Obs, PhaseKind, format_day};
use crate::samples::MetricSummary;
use crate::{AnalyzeError, Settings};

/// A grouping key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKey {
    /// The session's network label.
    Network,
    /// The session's code version label.
    CodeVersion,
    /// The session's vantage label.
    Vantage,
    /// UTC date of the request's start.
    Day,
    /// Target path name (`chat`, `docs`, or `direct` / `ping`).
    Path,
    /// Protocol phase.
    Phase,
    /// Routing strategy (direct requests).
    Strategy,
    /// Concurrency level.
    Concurrency,
    /// Provider that served the request.
    Provider,
    /// Where the numbers come from (always added).
    Provenance,
}

impl GroupKey {
    /// Every key.
    pub const ALL: [GroupKey; 10] = [
        GroupKey::Network,
        GroupKey::CodeVersion,
        GroupKey::Vantage,
        GroupKey::Day,
        GroupKey::Path,
        GroupKey::Phase,
        GroupKey::Strategy,
        GroupKey::Concurrency,
        GroupKey::Provider,
        GroupKey::Provenance,
    ];

    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupKey::Network => "network",
            GroupKey::CodeVersion => "code_version",
            GroupKey::Vantage => "vantage",
            GroupKey::Day => "day",
            GroupKey::Path => "path",
            GroupKey::Phase => "phase",
            GroupKey::Strategy => "strategy",
            GroupKey::Concurrency => "concurrency",
            GroupKey::Provider => "provider",
            GroupKey::Provenance => "provenance",
        }
    }

    /// Parse a comma-separated list, e.g. `"network,path"`.
    pub fn parse_list(s: &str) -> Result<Vec<GroupKey>, AnalyzeError> {
        s.split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::parse)
            .collect()
    }

    /// Whether values compare as text (else by their numeric code).
    fn textual(self) -> bool {
        matches!(
            self,
            GroupKey::Network
                | GroupKey::CodeVersion
                | GroupKey::Vantage
                | GroupKey::Path
                | GroupKey::Strategy
                | GroupKey::Provider
        )
    }

    /// The key's value of a row, as a code: interned id for text, else a number.
    fn code(self, frame: &Frame, o: &Obs) -> u64 {
        match self {
            GroupKey::Network => u64::from(frame.label(o, 0)),
            GroupKey::CodeVersion => u64::from(frame.label(o, 1)),
            GroupKey::Vantage => u64::from(frame.label(o, 2)),
            // Offset so that chronological order is numeric order.
            GroupKey::Day => (i64::from(o.day()) - i64::from(i32::MIN)) as u64,
            GroupKey::Path => u64::from(o.path),
            GroupKey::Phase => phase_rank(o.phase),
            GroupKey::Strategy => u64::from(o.strategy),
            GroupKey::Concurrency => u64::from(o.concurrency),
            GroupKey::Provider => u64::from(o.provider),
            GroupKey::Provenance => provenance_rank(o.provenance),
        }
    }

    fn value(self, frame: &Frame, code: u64) -> KeyValue {
        let text = |id: u64| match frame.str(id as u32) {
            Some(s) if id as u32 != NONE => KeyValue::Text(s.to_string()),
            _ => KeyValue::Missing,
        };
        match self {
            GroupKey::Day => KeyValue::Text(format_day((code as i64 + i64::from(i32::MIN)) as i32)),
            GroupKey::Phase => KeyValue::Text(HEADLINE_ORDER[code as usize].as_str().to_string()),
            GroupKey::Concurrency if code == 0 => KeyValue::Missing,
            GroupKey::Concurrency => KeyValue::Number(code as u32),
            GroupKey::Provenance => {
                KeyValue::Text(PROVENANCE_ORDER[code as usize].as_str().to_string())
            }
            _ => text(code),
        }
    }
}

/// Phases in table order: the headline (warm) first.
pub const HEADLINE_ORDER: [PhaseKind; 8] = [
    PhaseKind::Warm,
    PhaseKind::Fresh,
    PhaseKind::Concurrency,
    PhaseKind::Rate,
    PhaseKind::Conversation,
    PhaseKind::Cold,
    PhaseKind::Direct,
    PhaseKind::Ping,
];

pub(crate) fn phase_rank(p: PhaseKind) -> u64 {
    HEADLINE_ORDER.iter().position(|&q| q == p).unwrap_or(0) as u64
}

const PROVENANCE_ORDER: [Provenance; 4] = [
    Provenance::Measured,
    Provenance::Emulated,
    Provenance::Imported,
    Provenance::Synthetic,
];

fn provenance_rank(p: Provenance) -> u64 {
    PROVENANCE_ORDER.iter().position(|&q| q == p).unwrap_or(0) as u64
}

impl FromStr for GroupKey {
    type Err = AnalyzeError;
    fn from_str(s: &str) -> Result<GroupKey, AnalyzeError> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        GroupKey::ALL
            .into_iter()
            .find(|k| k.as_str() == norm)
            .ok_or_else(|| AnalyzeError::UnknownGroupKey { key: s.to_string() })
    }
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The value of one key in a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum KeyValue {
    /// The row has no value for it (JSON `null`).
    Missing,
    /// A number (concurrency).
    Number(u32),
    /// Text.
    Text(String),
}

impl fmt::Display for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyValue::Missing => f.write_str("-"),
            KeyValue::Number(n) => write!(f, "{n}"),
            KeyValue::Text(s) => f.write_str(s),
        }
    }
}

/// The key values of a group, in key order. Serializes as a JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLabel {
    /// (key, value) pairs.
    pub parts: Vec<(GroupKey, KeyValue)>,
}

impl GroupLabel {
    /// The value of `key`, if it is part of the label.
    pub fn get(&self, key: GroupKey) -> Option<&KeyValue> {
        self.parts.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

impl Serialize for GroupLabel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.parts.len()))?;
        for (k, v) in &self.parts {
            m.serialize_entry(k.as_str(), v)?;
        }
        m.end()
    }
}

impl fmt::Display for GroupLabel {
    /// `path=docs, provenance=measured`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

/// A group: its label and the indices of its rows (into the rows given to
/// [`group`], equally into the frame).
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Key values.
    pub label: GroupLabel,
    /// Provenance of every row in it.
    pub provenance: Provenance,
    /// Row indices, ascending.
    pub rows: Vec<u32>,
}

/// The keys actually used: `keys` without repeats, plus provenance.
pub(crate) fn effective_keys(keys: &[GroupKey]) -> Vec<GroupKey> {
    let mut out: Vec<GroupKey> = Vec::with_capacity(keys.len() + 1);
    for &k in keys {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if !out.contains(&GroupKey::Provenance) {
        out.push(GroupKey::Provenance);
    }
    out
}

/// The keys a TTFT table groups by under the one pooling rule (see the
/// module doc): `keys`, then the phase, the concurrency level and the
/// direct strategy when `keys` leave them out, then the provenance kind.
pub fn headline_keys(keys: &[GroupKey]) -> Vec<GroupKey> {
    let mut out: Vec<GroupKey> = keys.to_vec();
    for k in [GroupKey::Phase, GroupKey::Concurrency, GroupKey::Strategy] {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    effective_keys(&out)
}

/// Keys that group rows which behave differently: when a group's rows
/// hold several values of one of them, the group pools them and says so.
pub const POOL_LABELLED: [GroupKey; 2] = [GroupKey::Path, GroupKey::CodeVersion];

/// Of [`POOL_LABELLED`], the keys whose values differ among `rows`.
pub(crate) fn pooled_keys(frame: &Frame, rows: &[u32]) -> Vec<GroupKey> {
    POOL_LABELLED
        .into_iter()
        .filter(|k| {
            let mut codes = rows.iter().map(|&i| k.code(frame, frame.obs(i)));
            let first = codes.next();
            codes.any(|c| Some(c) != first)
        })
        .collect()
}

/// Group the rows of a frame by `keys` (provenance added if missing).
pub fn group(frame: &Frame, keys: &[GroupKey]) -> Vec<Group> {
    group_where(frame, keys, |_| true)
}

/// Group the rows of a frame within one phase (every phase: `None`) by
/// `keys` (provenance added if missing).
pub fn group_in_phase(frame: &Frame, keys: &[GroupKey], phase: Option<PhaseKind>) -> Vec<Group> {
    group_where(frame, keys, |o| phase.is_none_or(|p| o.phase == p))
}

/// Group the rows of one slice of a frame (a phase, or one level of the
/// concurrency phase) by `keys` (provenance added if missing).
pub fn group_in_slice(
    frame: &Frame,
    keys: &[GroupKey],
    slice: crate::compare::Slice,
) -> Vec<Group> {
    group_where(frame, keys, |o| slice.keeps(o))
}

/// Group the rows of a frame that satisfy `keep`.
pub(crate) fn group_where(
    frame: &Frame,
    keys: &[GroupKey],
    keep: impl Fn(&Obs) -> bool,
) -> Vec<Group> {
    let keys = effective_keys(keys);
    let mut map: HashMap<[u64; 10], Vec<u32>, FxBuild> = HashMap::default();
    for (i, o) in frame.obs.iter().enumerate() {
        // A warm request on a new connection is not warm: no warm figure
        // includes it (the connection finding counts it).
        if !keep(o) || o.reconnected_warm() {
            continue;
        }
        let mut code = [0u64; 10];
        for (slot, k) in code.iter_mut().zip(&keys) {
            *slot = k.code(frame, o);
        }
        map.entry(code).or_default().push(i as u32);
    }
    let mut entries: Vec<([u64; 10], Vec<u32>)> = map.into_iter().collect();
    entries.sort_by(|(a, _), (b, _)| {
        for (slot, k) in keys.iter().enumerate() {
            let ord = if k.textual() {
                let s = |c: u64| (c as u32 != NONE).then(|| frame.str(c as u32)).flatten();
                s(a[slot]).cmp(&s(b[slot]))
            } else {
                a[slot].cmp(&b[slot])
            };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    });
    entries
        .into_iter()
        .map(|(code, rows)| {
            let parts = keys
                .iter()
                .zip(code)
                .map(|(&k, c)| (k, k.value(frame, c)))
                .collect();
            Group {
                label: GroupLabel { parts },
                provenance: frame.obs(rows[0]).provenance,
                rows,
            }
        })
        .collect()
}

/// One group's summary of a metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    /// Key values.
    pub label: GroupLabel,
    /// Provenance of its rows.
    pub provenance: Provenance,
    /// Sessions contributing rows.
    pub sessions: usize,
    /// Counts, error rate, mean and percentiles with CIs.
    pub summary: MetricSummary,
}

/// Group by `keys` and summarise `metric` in every group.
pub fn group_summaries(
    frame: &Frame,
    keys: &[GroupKey],
    metric: Metric,
    settings: &Settings,
) -> Vec<GroupSummary> {
    group(frame, keys)
        .into_iter()
        .map(|g| GroupSummary {
            sessions: distinct_sessions(frame, &g.rows),
            summary: MetricSummary::of_rows(frame, &g.rows, metric, settings),
            label: g.label,
            provenance: g.provenance,
        })
        .collect()
}

pub(crate) fn distinct_sessions(frame: &Frame, rows: &[u32]) -> usize {
    let mut seen: Vec<u32> = rows.iter().map(|&i| frame.obs(i).session).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{meta, row};

    #[test]
    fn keys_parse() {
        assert_eq!(
            GroupKey::parse_list("network, code-version,day").unwrap(),
            vec![GroupKey::Network, GroupKey::CodeVersion, GroupKey::Day]
        );
        assert!(matches!(
            "region".parse::<GroupKey>(),
            Err(AnalyzeError::UnknownGroupKey { .. })
        ));
        for k in GroupKey::ALL {
            assert_eq!(k.as_str().parse::<GroupKey>().unwrap(), k);
        }
    }

    #[test]
    fn groups_are_ordered_and_split_by_provenance() {
        let mut s1 = meta("s1", Provenance::Measured);
        s1.labels.network = "office".into();
        let mut s2 = meta("s2", Provenance::Measured);
        s2.labels.network = "home".into();
        let s3 = meta("s3", Provenance::Emulated);
        let mut rows = vec![
            row("s1", "warm", Some("docs"), Some(1.0)),
            row("s1", "warm", Some("chat"), Some(2.0)),
            row("s2", "warm", Some("chat"), Some(3.0)),
            row("s1", "concurrency", Some("chat"), Some(4.0)),
            row("s1", "concurrency", Some("chat"), Some(5.0)),
        ];
        rows[3].concurrency = Some(10);
        rows[4].concurrency = Some(3);
        rows[2].started_at = crate::testutil::utc("2026-12-01T00:00:01Z");
        let mut e = row("s3", "warm", Some("chat"), Some(6.0));
        e.provenance = Provenance::Emulated;
        rows.push(e);
        let sessions = [s1, s2, s3];

        let g = group(
            &Frame::from_rows(&rows, &sessions).unwrap(),
            &[GroupKey::Path],
        );
        let labels: Vec<String> = g.iter().map(|g| g.label.to_string()).collect();
        assert_eq!(
            labels,
            [
                "path=chat, provenance=measured",
                "path=chat, provenance=emulated",
                "path=docs, provenance=measured"
            ]
        );
        assert_eq!(g[0].rows, vec![1, 2, 3, 4]);

        let g = group(
            &Frame::from_rows(&rows, &sessions).unwrap(),
            &[GroupKey::Network, GroupKey::Concurrency],
        );
        let labels: Vec<String> = g.iter().map(|g| g.label.to_string()).collect();
        assert_eq!(
            labels,
            [
                "network=, concurrency=-, provenance=emulated",
                "network=home, concurrency=-, provenance=measured",
                "network=office, concurrency=-, provenance=measured",
                "network=office, concurrency=3, provenance=measured",
                "network=office, concurrency=10, provenance=measured",
            ]
        );
        let g = group(
            &Frame::from_rows(&rows, &sessions).unwrap(),
            &[GroupKey::Day],
        );
        assert_eq!(g.len(), 3);
        assert_eq!(
            g[0].label.get(GroupKey::Day),
            Some(&KeyValue::Text("2026-11-30".into()))
        );
        assert_eq!(
            g[2].label.get(GroupKey::Day),
            Some(&KeyValue::Text("2026-12-01".into()))
        );
        let json = serde_json::to_value(&g[0].label).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"day": "2026-11-30", "provenance": "measured"})
        );
    }

    #[test]
    fn summaries_leave_out_warmups_and_failures() {
        let sessions = [meta("s1", Provenance::Measured)];
        let mut rows: Vec<_> = (0..10)
            .map(|i| row("s1", "warm", Some("chat"), Some(f64::from(i))))
            .collect();
        rows[0].sample.warmup = true;
        rows[1].sample.error = Some(firsttoken_record::SampleError {
            kind: firsttoken_record::ErrorKind::Timeout,
            message: "t".into(),
        });
        let frame = Frame::from_rows(&rows, &sessions).unwrap();
        let g = group_summaries(&frame, &[GroupKey::Phase], Metric::Ttft, &Settings::new(3));
        assert_eq!(g.len(), 1);
        let m = &g[0].summary;
        assert_eq!((m.requests, m.failed, m.n), (9, 1, 8));
        // numpy.percentile(range(2, 10), 50) = 5.5
        assert_eq!(m.p50.point(), Some(5.5));
        assert_eq!(g[0].sessions, 1);
    }

    /// Issue 24, defects 2 and 3: the headline table pooled warm requests
    /// with concurrency bursts and cold probes ("chat, n = 164"), and
    /// `compare`, grouping by code version only, pooled the app with the
    /// provider ("0.12.4 · emulated, n = 324", direct rows included).
    #[test]
    fn phases_levels_strategies_and_app_and_direct_never_pool() {
        let mut m = meta("s", Provenance::Measured);
        m.labels.code_version = "v1".into();
        let mut rows = Vec::new();
        for path in ["chat", "docs"] {
            rows.push(row("s", "warm", Some(path), Some(100.0)));
            rows.push(row("s", "cold", Some(path), Some(900.0)));
            for k in [1, 3] {
                let mut r = row("s", "concurrency", Some(path), Some(300.0));
                r.concurrency = Some(k);
                rows.push(r);
            }
        }
        for strategy in ["fast", "cheap"] {
            let mut r = row("s", "direct", Some("direct"), Some(80.0));
            r.dest = firsttoken_record::vocab::Destination::Direct {
                strategy: Some(strategy.into()),
            };
            rows.push(r);
        }
        let sessions = [m];
        let frame = Frame::from_rows(&rows, &sessions).unwrap();
        let settings = crate::Settings::new(1);
        let groups = crate::session::pooled(
            &frame,
            &headline_keys(&[GroupKey::CodeVersion]),
            Metric::Ttft,
            &settings,
        );
        let label = |g: &crate::session::PooledGroup| g.label.to_string();
        let labels: Vec<String> = groups.iter().map(label).collect();
        assert_eq!(
            labels,
            [
                "code_version=v1, phase=warm, concurrency=-, strategy=-, provenance=measured",
                "code_version=v1, phase=concurrency, concurrency=1, strategy=-, provenance=measured",
                "code_version=v1, phase=concurrency, concurrency=3, strategy=-, provenance=measured",
                "code_version=v1, phase=cold, concurrency=-, strategy=-, provenance=measured",
                "code_version=v1, phase=direct, concurrency=-, strategy=cheap, provenance=measured",
                "code_version=v1, phase=direct, concurrency=-, strategy=fast, provenance=measured",
            ]
        );
        // Each app group pools two paths and says so; the direct rows pool
        // none (they have one path, `direct`).
        for g in &groups {
            let want: &[GroupKey] =
                if g.label.get(GroupKey::Phase) == Some(&KeyValue::Text("direct".into())) {
                    &[]
                } else {
                    &[GroupKey::Path]
                };
            assert_eq!(g.pools, want, "{}", label(g));
            assert!(g.pooled.n <= 2, "one phase, one level: {}", label(g));
        }
        // Grouped by path too, nothing pools.
        let by_path = crate::session::pooled(
            &frame,
            &headline_keys(&[GroupKey::CodeVersion, GroupKey::Path]),
            Metric::Ttft,
            &settings,
        );
        assert!(by_path.iter().all(|g| g.pools.is_empty()));
        assert!(by_path.iter().all(|g| g.pooled.n == 1));
    }
}
