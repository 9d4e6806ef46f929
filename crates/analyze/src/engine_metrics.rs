//! The engine's own metrics over a session: what its Prometheus counters
//! and histograms gained between the scrape before the session's first
//! request and the one after its last ([`firsttoken_record::EngineScrape`],
//! `[engine] metrics_url`).
//!
//! A histogram's difference is the distribution of everything the engine
//! observed in between, at the resolution of its buckets: a quantile is
//! reported as the bucket it falls in (`(0.1 s, 0.25 s]`), never as an
//! interpolated value finer than the buckets. Where firsttoken measured
//! the same quantity (the engine's time to first token beside firsttoken's
//! TTFT, its end-to-end latency beside firsttoken's E2E), firsttoken's own
//! values of the session are placed in the same buckets, so the two
//! distributions are compared at the one resolution both have. The
//! engine's histogram pools every request it served in between — every
//! phase, path and warm-up of the session, and any other client's — so
//! firsttoken's side pools the session's app requests the same way (pings
//! and direct requests left out), and says so; the two counts are shown
//! side by side, and a difference between them is not explained away. The
//! engine's clock starts when a request reaches it: firsttoken's values
//! hold the network and the app besides.
//!
//! An engine whose `process_start_time_seconds` changed between the reads
//! restarted: its session has no difference. A series whose value went
//! down, or whose buckets changed, has none either and is named instead.
//! A family the parser cannot assemble (the HELP and TYPE of a labelled
//! family no request touched) is left out; the rest of the text is read.

use std::collections::BTreeMap;

use prom_text_format_parser::{Metric as Family, Type, ValueType, parse_scrape};
use serde::Serialize;

use firsttoken_record::{EngineScrape, ScrapeMoment};

use crate::Frame;
use crate::metric::Metric;

/// The quantiles each histogram is read at.
pub const QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

/// What the engine's metrics say about each session that scraped them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EngineMetrics {
    /// One entry per session with an `[engine] metrics_url`, in the
    /// frame's session order.
    pub sessions: Vec<SessionMetrics>,
}

impl EngineMetrics {
    /// True when no session scraped an engine.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

/// One session's scrapes, differenced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionMetrics {
    /// The session.
    pub session: String,
    /// The endpoint read.
    pub url: String,
    /// Seconds between the two scrapes; `None` when one is missing.
    pub seconds: Option<f64>,
    /// Why there are no differences: a scrape missing or failed, or a body
    /// that is not Prometheus text; `None` when both were read.
    pub missing: Option<String>,
    /// Histograms that observed anything in between, per label set.
    pub histograms: Vec<HistogramDelta>,
    /// Counters that grew in between, per label set.
    pub counters: Vec<CounterDelta>,
    /// Series that went down, or whose buckets changed, between the
    /// scrapes (`name{labels}`), most likely a restart: they have no
    /// difference.
    pub reset: Vec<String>,
}

/// A bucket a quantile falls in: `(lower, upper]`, in the metric's own
/// unit; `lower` is `None` for the first bucket and `upper` is infinite
/// for the last (`+Inf`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BucketQuantile {
    /// The quantile, e.g. 0.9.
    pub q: f64,
    /// The bucket's lower bound (exclusive).
    pub lower: Option<f64>,
    /// Its upper bound (inclusive); `f64::INFINITY` for `+Inf`.
    #[serde(serialize_with = "finite_or_null")]
    pub upper: f64,
}

fn finite_or_null<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_none()
    }
}

/// firsttoken's own values of the quantity a histogram measures, placed
/// in its buckets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OursInBuckets {
    /// firsttoken's metric (TTFT or E2E), in seconds here to match.
    pub metric: Metric,
    /// The session's answered app requests with a value (every app phase,
    /// path and warm-up pooled, as the engine's histogram pools them;
    /// pings and direct requests left out).
    pub n: u64,
    /// The bucket each of [`QUANTILES`] falls in.
    pub quantiles: Vec<BucketQuantile>,
}

/// What one histogram series gained between the scrapes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramDelta {
    /// The family's name, e.g. `vllm:time_to_first_token_seconds`.
    pub name: String,
    /// The series' labels (`le` aside).
    pub labels: BTreeMap<String, String>,
    /// Observations in between.
    pub count: u64,
    /// Their sum, in the metric's unit.
    pub sum: f64,
    /// Upper bounds of the buckets, ascending, `+Inf` last (as infinity).
    #[serde(skip)]
    pub bounds: Vec<f64>,
    /// The bucket each of [`QUANTILES`] falls in.
    pub quantiles: Vec<BucketQuantile>,
    /// True when the name ends `_seconds`: bounds and sum in seconds;
    /// else they are counts (e.g. tokens).
    pub seconds: bool,
    /// firsttoken's values of the same quantity in the same buckets, for a
    /// family firsttoken also measures.
    pub ours: Option<OursInBuckets>,
}

/// What one counter series gained between the scrapes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterDelta {
    /// The counter's name, e.g. `llamacpp:tokens_predicted_total`.
    pub name: String,
    /// The series' labels.
    pub labels: BTreeMap<String, String>,
    /// Its gain.
    pub delta: f64,
}

/// The firsttoken metric an engine histogram measures too, by the end of
/// its name: the engine's time to first token and its end-to-end request
/// latency (vLLM's and SGLang's names).
pub fn ours_for(name: &str) -> Option<Metric> {
    let base = name.rsplit(':').next().unwrap_or(name);
    match base {
        "time_to_first_token_seconds" => Some(Metric::Ttft),
        "e2e_request_latency_seconds" => Some(Metric::E2e),
        _ => None,
    }
}

/// The engine metrics of every session in `frame` that has scrapes.
pub fn engine_metrics(frame: &Frame, scrapes: &[EngineScrape]) -> EngineMetrics {
    let mut out = EngineMetrics::default();
    for (six, session) in frame.sessions.iter().enumerate() {
        let of = |m: ScrapeMoment| {
            scrapes
                .iter()
                .find(|s| s.session_id == session.id && s.moment == m)
        };
        let (start, end) = (of(ScrapeMoment::Start), of(ScrapeMoment::End));
        let Some(url) = start.or(end).map(|s| s.url.clone()) else {
            continue;
        };
        let ours = |m: Metric| -> Vec<f64> {
            frame
                .obs
                .iter()
                .filter(|o| o.session as usize == six && o.error.is_none() && o.phase.is_app())
                .map(|o| m.of(o) / 1000.0)
                .filter(|v| v.is_finite())
                .collect()
        };
        out.sessions
            .push(session_metrics(&session.id, url, (start, end), &ours));
    }
    out
}

fn session_metrics(
    session: &str,
    url: String,
    (start, end): (Option<&EngineScrape>, Option<&EngineScrape>),
    ours: &dyn Fn(Metric) -> Vec<f64>,
) -> SessionMetrics {
    let mut m = SessionMetrics {
        session: session.to_owned(),
        url,
        seconds: None,
        missing: None,
        histograms: Vec::new(),
        counters: Vec::new(),
        reset: Vec::new(),
    };
    let body = |s: Option<&EngineScrape>, moment: &str| -> Result<Vec<Family>, String> {
        let s = s.ok_or_else(|| format!("no scrape {moment} the session"))?;
        let text = s.body.as_deref().ok_or_else(|| {
            format!(
                "the scrape {moment} the session failed: {}",
                s.error.as_deref().unwrap_or("no body")
            )
        })?;
        // A family the parser cannot assemble (prometheus_client writes
        // the HELP and TYPE of a labelled family no request touched, with
        // no sample) is left out; the others are kept.
        match parse_scrape(text) {
            (families, _) if !families.is_empty() => Ok(families),
            (_, Some(e)) => Err(format!(
                "the scrape {moment} the session is not Prometheus text: {}",
                parse_error(&e)
            )),
            (_, None) => Err(format!("the scrape {moment} the session holds no metric")),
        }
    };
    let (a, b) = match (body(start, "before"), body(end, "after")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            m.missing = Some(e);
            return m;
        }
    };
    if let (Some(s), Some(e)) = (start, end) {
        m.seconds = Some((e.taken_at.unix_ms() - s.taken_at.unix_ms()) as f64 / 1000.0);
    }
    // An engine that says when its process started, and started again in
    // between: its counts began anew, so no difference means anything.
    if let (Some(x), Some(y)) = (process_start(&a), process_start(&b))
        && x != y
    {
        m.missing = Some(format!(
            "the engine restarted between the reads (process_start_time_seconds {} → {})",
            x, y
        ));
        return m;
    }
    let before = Series::of(&a);
    for (key, after) in Series::of(&b).0 {
        let label = || series_label(&key.0, &key.1);
        let prior = before.0.get(&key);
        match after {
            Value::Counter(v) => {
                let d = v - prior.and_then(Value::counter).unwrap_or(0.0);
                if d < 0.0 {
                    m.reset.push(label());
                } else if d > 0.0 {
                    m.counters.push(CounterDelta {
                        name: key.0.clone(),
                        labels: key.1.clone(),
                        delta: d,
                    });
                }
            }
            Value::Histogram(h) => {
                let p = prior.and_then(Value::histogram);
                match h.minus(p) {
                    None => m.reset.push(label()),
                    Some(d) if d.count() == 0 => {}
                    Some(d) => {
                        let quantiles = d.quantiles();
                        let metric = ours_for(&key.0);
                        m.histograms.push(HistogramDelta {
                            seconds: key.0.ends_with("_seconds"),
                            ours: metric.map(|metric| {
                                let values = ours(metric);
                                let mine = Hist::of_values(&d.bounds, &values);
                                OursInBuckets {
                                    metric,
                                    n: values.len() as u64,
                                    quantiles: mine.quantiles(),
                                }
                            }),
                            name: key.0,
                            labels: key.1,
                            count: d.count(),
                            sum: d.sum,
                            bounds: d.bounds,
                            quantiles,
                        });
                    }
                }
            }
        }
    }
    m
}

/// The `process_start_time_seconds` gauge, when the engine exports it.
fn process_start(families: &[Family]) -> Option<f64> {
    let f = families
        .iter()
        .find(|f| f.name == "process_start_time_seconds")?;
    f.samples.first().map(|s| number(&s.value))
}

/// What the parser found wrong, in a sentence.
fn parse_error(e: &prom_text_format_parser::ScrapeParseError) -> String {
    use prom_text_format_parser::ScrapeParseError as E;
    match e {
        E::Parse(m) => m.lines().next().unwrap_or("unreadable").to_string(),
        E::Collect(errors) => errors.first().map_or_else(String::new, |m| {
            format!("line {}: {}", m.line_no.start + 1, m.error)
        }),
    }
}

/// A series as Prometheus writes it: `name{a="1",b="2"}`, or the name
/// alone.
pub fn series_label(name: &str, labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return name.to_owned();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{name}{{{}}}", inner.join(","))
}

type Key = (String, BTreeMap<String, String>);

/// A series' value in one scrape.
#[derive(Debug, Clone)]
enum Value {
    Counter(f64),
    Histogram(Hist),
}

impl Value {
    fn counter(&self) -> Option<f64> {
        match self {
            Value::Counter(v) => Some(*v),
            Value::Histogram(_) => None,
        }
    }
    fn histogram(&self) -> Option<&Hist> {
        match self {
            Value::Histogram(h) => Some(h),
            Value::Counter(_) => None,
        }
    }
}

/// A histogram series: cumulative counts per upper bound, ascending, and
/// the sum of observations.
#[derive(Debug, Clone, PartialEq)]
struct Hist {
    bounds: Vec<f64>,
    cumulative: Vec<f64>,
    sum: f64,
}

impl Hist {
    /// Observations (the `+Inf` bucket's count).
    fn count(&self) -> u64 {
        self.cumulative
            .last()
            .map_or(0, |c| c.max(0.0).round() as u64)
    }

    /// This minus `prior` (absent: zero); `None` when the buckets differ
    /// or a count went down (the engine restarted).
    fn minus(&self, prior: Option<&Hist>) -> Option<Hist> {
        let Some(p) = prior else {
            return Some(self.clone());
        };
        if p.bounds != self.bounds {
            return None;
        }
        let cumulative: Vec<f64> = self
            .cumulative
            .iter()
            .zip(&p.cumulative)
            .map(|(a, b)| a - b)
            .collect();
        if cumulative.iter().any(|c| *c < 0.0) {
            return None;
        }
        Some(Hist {
            bounds: self.bounds.clone(),
            cumulative,
            sum: self.sum - p.sum,
        })
    }

    /// `values` counted into `bounds`.
    fn of_values(bounds: &[f64], values: &[f64]) -> Hist {
        let cumulative = bounds
            .iter()
            .map(|b| values.iter().filter(|v| **v <= *b).count() as f64)
            .collect();
        Hist {
            bounds: bounds.to_vec(),
            cumulative,
            sum: values.iter().sum(),
        }
    }

    /// The bucket each of [`QUANTILES`] falls in: the first whose
    /// cumulative count reaches the quantile's rank (nearest rank,
    /// `ceil(q·n)`); none without observations.
    fn quantiles(&self) -> Vec<BucketQuantile> {
        let n = self.count();
        if n == 0 {
            return Vec::new();
        }
        QUANTILES
            .iter()
            .filter_map(|&q| {
                let rank = ((q * n as f64).ceil()).max(1.0);
                let i = self.cumulative.iter().position(|c| *c >= rank)?;
                Some(BucketQuantile {
                    q,
                    lower: i.checked_sub(1).map(|j| self.bounds[j]),
                    upper: self.bounds[i],
                })
            })
            .collect()
    }
}

/// Every counter and histogram series of a scrape, by name and labels.
struct Series(BTreeMap<Key, Value>);

impl Series {
    fn of(families: &[Family]) -> Series {
        let mut out = BTreeMap::new();
        for f in families {
            match f.kind {
                Type::Counter => counters(f, &mut out),
                Type::Histogram => histograms(f, &mut out),
                _ => {}
            }
        }
        Series(out)
    }
}

fn labels_of(s: &prom_text_format_parser::Sample, skip: &str) -> BTreeMap<String, String> {
    s.labels
        .iter()
        .filter(|l| l.key != skip)
        .map(|l| (l.key.clone(), l.value.clone()))
        .collect()
}

fn number(v: &prom_text_format_parser::Value) -> f64 {
    v.value.parse().unwrap_or(f64::NAN)
}

fn counters(f: &Family, out: &mut BTreeMap<Key, Value>) {
    for s in &f.samples {
        let v = number(&s.value);
        if v.is_finite() {
            out.insert((f.name.clone(), labels_of(s, "")), Value::Counter(v));
        }
    }
}

fn histograms(f: &Family, out: &mut BTreeMap<Key, Value>) {
    // Buckets per label set, with the sum beside them.
    // (upper bound, cumulative count) pairs and the sum.
    type Buckets = (Vec<(f64, f64)>, f64);
    let mut series: BTreeMap<BTreeMap<String, String>, Buckets> = BTreeMap::new();
    for s in &f.samples {
        let labels = labels_of(s, "le");
        let v = number(&s.value);
        let entry = series.entry(labels).or_default();
        match s.value.value_type {
            ValueType::Sample => {
                let le = s
                    .labels
                    .iter()
                    .find(|l| l.key == "le")
                    .and_then(|l| l.value.parse::<f64>().ok());
                if let Some(le) = le {
                    entry.0.push((le, v));
                }
            }
            ValueType::Sum => entry.1 = v,
            ValueType::Count => {}
        }
    }
    for (labels, (mut buckets, sum)) in series {
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        if buckets.is_empty() || buckets.iter().any(|(_, c)| !c.is_finite()) {
            continue;
        }
        let (bounds, cumulative) = buckets.into_iter().unzip();
        out.insert(
            (f.name.clone(), labels),
            Value::Histogram(Hist {
                bounds,
                cumulative,
                sum,
            }),
        );
    }
}

#[cfg(test)]
#[path = "engine_metrics_tests.rs"]
mod tests;
