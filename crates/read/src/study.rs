//! The one analysis of what was loaded: every diagnostic, the server spans
//! joined to their samples, and a run's cross-agent rule.

use std::collections::BTreeMap;

use firsttoken_analyze::{Analysis, GroupKey, SpanInput, analyze, attach_traces};
use firsttoken_record::run::CrossAgent;
use firsttoken_record::session::SessionMeta;
use serde::Deserialize;

use crate::Loaded;

/// The analysis of `loaded`, grouped by `keys`, with its sessions'
/// settings: the diagnostics, then the server spans joined to their
/// samples (when a session has spans), the engine's metrics differenced
/// over each session that read them, then, for a run whose agents'
/// clocks are not known well enough, no concurrency verdict (bursts split
/// over such agents cannot be judged as one level; the run's head says
/// why).
pub fn analyse(loaded: &Loaded, keys: &[GroupKey]) -> Analysis {
    let settings = loaded.settings();
    let mut analysis = analyze(&loaded.frame, &loaded.sessions, keys, &settings);
    let spans = &loaded.spans;
    let input = SpanInput {
        sessions: &spans.sessions,
        rows: &spans.rows,
        spans: &spans.spans,
        groups: &spans.groups,
    };
    attach_traces(&mut analysis, &loaded.frame, &loaded.sessions, &input);
    analysis.engine_metrics =
        firsttoken_analyze::engine_metrics::engine_metrics(&loaded.frame, &loaded.scrapes);
    analysis.render =
        firsttoken_analyze::render::render_groups(&loaded.painted, &loaded.sessions, &settings);
    if let Some(run) = &loaded.run
        && run.start.cross_agent != CrossAgent::Judged
    {
        analysis.concurrency.clear();
    }
    analysis
}

/// One section of a stored session config, typed as far as the reading
/// side uses it; `None` when it is missing or has another shape (older
/// sessions stored less), so one odd section hides nothing else.
fn section<T: for<'de> Deserialize<'de>>(s: &SessionMeta, name: &str) -> Option<T> {
    let v = s.spec.get("config")?.get(name)?;
    T::deserialize(v).ok()
}

#[derive(Debug, Deserialize)]
struct StoredDirect {
    url: String,
}

#[derive(Debug, Deserialize)]
struct StoredTraces {
    #[serde(default)]
    groups: BTreeMap<String, String>,
}

/// The span group map of the sessions' stored configs: each `[traces]
/// groups` entry, and each direct endpoint's host named as the model
/// provider (`host:<h> → model provider`) unless a config names it.
pub fn span_groups(sessions: &[SessionMeta]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for s in sessions {
        let direct_host = section::<StoredDirect>(s, "direct")
            .and_then(|d| firsttoken_plan::Target::parse(&d.url).ok())
            .map(|t| t.host);
        if let Some(h) = direct_host {
            out.entry(format!("host:{h}"))
                .or_insert_with(|| "model provider".to_string());
        }
        if let Some(t) = section::<StoredTraces>(s, "traces") {
            out.extend(t.groups);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_record::session::Provenance;

    fn session(spec: serde_json::Value) -> SessionMeta {
        SessionMeta {
            spec,
            ..crate::testutil::meta("s", "", Provenance::Measured)
        }
    }

    #[test]
    fn groups_come_from_the_stored_config_and_the_direct_host() {
        let s = session(serde_json::json!({"config": {
            "direct": {"url": "https://api.example.test/v1/chat/completions", "model": "m"},
            "traces": {"groups": {"auth": "database"}},
            "app": {"base_url": "http://127.0.0.1:1"}
        }}));
        let g = span_groups(&[s]);
        assert_eq!(g["auth"], "database");
        assert_eq!(g["host:api.example.test"], "model provider");
        // A spec without a config, or with other shapes, names no group.
        assert!(span_groups(&[session(serde_json::Value::Null)]).is_empty());
        let odd = session(serde_json::json!({"config": {
            "direct": {"url": "http://127.0.0.1:9/v1/chat/completions"},
            "traces": {"groups": 3}
        }}));
        assert_eq!(
            span_groups(&[odd]).into_iter().collect::<Vec<_>>(),
            [("host:127.0.0.1".to_string(), "model provider".to_string())]
        );
    }
}
