//! Sentences about the engine's own metrics
//! ([`firsttoken_analyze::engine_metrics`]): what its histograms observed
//! and its counters gained between the scrape before a session and the one
//! after, at the resolution of its buckets. A quantile is named by the
//! bucket it falls in, never by a value finer than the buckets.

use firsttoken_analyze::engine_metrics::{BucketQuantile, HistogramDelta, SessionMetrics};

use crate::format::{count, ms};

/// A series: `name{a="1"}`, or the name alone.
pub fn series(name: &str, labels: &std::collections::BTreeMap<String, String>) -> String {
    firsttoken_analyze::engine_metrics::series_label(name, labels)
}

/// A bound in the histogram's unit: `60 ms` for seconds, `20` for counts.
fn bound(v: f64, seconds: bool) -> String {
    if seconds { ms(v * 1000.0) } else { count(v) }
}

/// The bucket a quantile falls in: `(40 ms, 60 ms]`, `≤ 300 ms`,
/// `> 2560 s`.
pub fn bucket(b: &BucketQuantile, seconds: bool) -> String {
    match (b.lower, b.upper.is_finite()) {
        (None, true) => format!("≤ {}", bound(b.upper, seconds)),
        (Some(lo), true) => format!("({}, {}]", bound(lo, seconds), bound(b.upper, seconds)),
        (Some(lo), false) => format!("> {}", bound(lo, seconds)),
        (None, false) => "any".to_string(),
    }
}

/// `median in (40 ms, 60 ms], p90 in (100 ms, 250 ms], p99 in …`.
fn quantiles(qs: &[BucketQuantile], seconds: bool) -> String {
    qs.iter()
        .map(|b| {
            let name = if b.q == 0.5 {
                "median".to_string()
            } else {
                format!("p{}", (b.q * 100.0).round())
            };
            format!("{name} in {}", bucket(b, seconds))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The session's endpoint and the time between its scrapes, or why there
/// is no difference.
pub fn head(m: &SessionMetrics) -> String {
    match (&m.missing, m.seconds) {
        (Some(why), _) => format!("session {}: no difference from {}: {why}", m.session, m.url),
        (None, Some(s)) => format!(
            "session {}: {} read {} s apart, before the first request and after the last: {} histogram series gained observations, {} counters grew",
            m.session,
            m.url,
            count((s * 10.0).round() / 10.0),
            m.histograms.len(),
            m.counters.len()
        ),
        (None, None) => format!("session {}: {}", m.session, m.url),
    }
}

/// One histogram's difference, with firsttoken's own values beside it
/// where it measured the same quantity.
pub fn histogram(h: &HistogramDelta) -> String {
    let name = series(&h.name, &h.labels);
    let engine = format!(
        "{name}: the engine observed {} in between; {}",
        h.count,
        quantiles(&h.quantiles, h.seconds)
    );
    let Some(o) = &h.ours else {
        return engine;
    };
    let what = o.metric.name().to_uppercase();
    if o.n == 0 {
        return format!("{engine}; firsttoken has no {what} of the session to set beside it");
    }
    let counts = if h.count == o.n {
        String::new()
    } else {
        format!(
            " The counts differ (the engine {}, firsttoken {}) and the data does not say why: other clients, several engine calls per request, the engine's series split by label, requests firsttoken did not count, or the engine recording late could each make it.",
            h.count, o.n
        )
    };
    format!(
        "{engine}. firsttoken's {what} of the session's {} answered app requests (every app phase, path and warm-up pooled, as the engine's histogram pools them; pings and direct requests left out), in the same buckets, on firsttoken's clock, which also holds the network and the app before the engine: {}.{counts}",
        o.n,
        quantiles(&o.quantiles, h.seconds)
    )
}

/// Series whose counts went down: the engine restarted.
pub fn reset(m: &SessionMetrics) -> Option<String> {
    (!m.reset.is_empty()).then(|| {
        format!(
            "session {}: {} series went down or changed buckets between the scrapes (most likely the engine restarted) and have no difference: {}",
            m.session,
            m.reset.len(),
            m.reset.join(", ")
        )
    })
}

/// What `run` says of the engine's metrics when it ends: `None` when both
/// reads worked, else which read failed and why.
pub fn scrape_failed(s: &firsttoken_record::EngineScrape) -> Option<String> {
    let when = match s.moment {
        firsttoken_record::ScrapeMoment::Start => "before the first request",
        firsttoken_record::ScrapeMoment::End => "after the last request",
    };
    s.error.as_ref().map(|e| {
        format!(
            "the engine's metrics ({}) could not be read {when}: {e}; the report has no difference of them for this session",
            s.url
        )
    })
}
