use super::*;
use firsttoken_record::UtcTime;

/// /metrics as vLLM exposes it, rendered by the real `prometheus_client`
/// (`tests/fixtures/make_vllm_metrics.py`): 3 requests served before the
/// session, 20 during it.
const START: &str = include_str!("../tests/fixtures/vllm_metrics_start.txt");
const END: &str = include_str!("../tests/fixtures/vllm_metrics_end.txt");

fn scrape(moment: ScrapeMoment, at_ms: i64, body: Option<&str>) -> EngineScrape {
    EngineScrape {
        session_id: "s".into(),
        moment,
        taken_at: UtcTime::from_unix_ms(at_ms),
        url: "http://127.0.0.1:8000/metrics".into(),
        status: body.map(|_| 200),
        body: body.map(str::to_string),
        error: body.is_none().then(|| "connection refused".into()),
    }
}

/// firsttoken's TTFTs of the session, seconds: `ttft` for the engine's
/// time-to-first-token family, none for the rest.
fn diff(start: Option<&str>, end: Option<&str>, ttft: &[f64]) -> SessionMetrics {
    let (a, b) = (
        scrape(ScrapeMoment::Start, 1_000, start),
        scrape(ScrapeMoment::End, 31_500, end),
    );
    let ours = |m: Metric| match m {
        Metric::Ttft => ttft.to_vec(),
        _ => Vec::new(),
    };
    session_metrics("s", a.url.clone(), (Some(&a), Some(&b)), &ours)
}

/// The counters that grew, by name.
fn grew(m: &SessionMetrics) -> Vec<(&str, f64)> {
    m.counters
        .iter()
        .map(|c| (c.name.as_str(), c.delta))
        .collect()
}

fn family<'a>(m: &'a SessionMetrics, name: &str) -> &'a HistogramDelta {
    m.histograms
        .iter()
        .find(|h| h.name == name)
        .unwrap_or_else(|| panic!("no {name} in {m:?}"))
}

fn q(q: f64, lower: Option<f64>, upper: f64) -> BucketQuantile {
    BucketQuantile { q, lower, upper }
}

#[test]
fn a_histogram_gains_what_the_engine_saw_during_the_session_at_its_buckets() {
    let m = diff(Some(START), Some(END), &[]);
    assert_eq!(m.missing, None);
    assert_eq!(m.seconds, Some(30.5));
    assert!(m.reset.is_empty(), "{:?}", m.reset);
    let ttft = family(&m, "vllm:time_to_first_token_seconds");
    assert_eq!(
        ttft.labels,
        [("engine", "0"), ("model_name", "tiny-llama")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into()
    );
    // 20 during: 11 in (0.04, 0.06], 6 in (0.06, 0.08], 2 in (0.1, 0.25],
    // 1 in (0.5, 0.75]; the 3 before are gone from the difference.
    assert_eq!(ttft.count, 20);
    assert!((ttft.sum - (11.0 * 0.045 + 6.0 * 0.07 + 2.0 * 0.2 + 0.6)).abs() < 1e-9);
    assert!(ttft.seconds);
    assert_eq!(
        ttft.quantiles,
        [
            q(0.5, Some(0.04), 0.06),
            q(0.9, Some(0.1), 0.25),
            q(0.99, Some(0.5), 0.75)
        ]
    );
    let e2e = family(&m, "vllm:e2e_request_latency_seconds");
    assert_eq!(e2e.count, 20);
    // The 10th of 20 (nearest rank) is one of the ten 0.9 s.
    assert_eq!(e2e.quantiles[0], q(0.5, Some(0.8), 1.0));
    // A histogram that observed only zeros still counts them.
    let queue = family(&m, "vllm:request_queue_time_seconds");
    assert_eq!((queue.count, queue.quantiles[2]), (20, q(0.99, None, 0.3)));
    // Counters: what grew, with their labels; gauges are not differenced.
    let grew = grew(&m);
    assert_eq!(
        grew,
        [
            ("vllm:prompt_tokens_total", 1600.0),
            ("vllm:request_success_total", 20.0)
        ]
    );
    assert_eq!(m.counters[1].labels["finished_reason"], "length");
}

#[test]
fn firsttokens_own_values_land_in_the_same_buckets() {
    // firsttoken's TTFT is the engine's plus the HTTP server and the
    // network: here 20 values, 2 ms above the engine's.
    let ours: Vec<f64> = [0.047; 11]
        .into_iter()
        .chain([0.072; 6])
        .chain([0.202; 2])
        .chain([0.602])
        .collect();
    let m = diff(Some(START), Some(END), &ours);
    let ttft = family(&m, "vllm:time_to_first_token_seconds");
    let mine = ttft.ours.as_ref().expect("TTFT is firsttoken's metric too");
    assert_eq!((mine.metric, mine.n), (Metric::Ttft, 20));
    assert_eq!(mine.quantiles, ttft.quantiles);
    // A family firsttoken does not measure has no side of its own.
    assert!(family(&m, "vllm:request_queue_time_seconds").ours.is_none());
    // An e2e family with no firsttoken values: n = 0, no quantiles.
    let e2e = family(&m, "vllm:e2e_request_latency_seconds");
    let none = e2e.ours.as_ref().unwrap();
    assert_eq!((none.n, none.quantiles.len()), (0, 0));
}

#[test]
fn a_failed_or_missing_scrape_says_so_and_differences_nothing() {
    let m = diff(Some(START), None, &[]);
    assert_eq!(
        m.missing.as_deref(),
        Some("the scrape after the session failed: connection refused")
    );
    assert!(m.histograms.is_empty() && m.counters.is_empty());
    let m = diff(Some("this is {not prometheus"), Some(END), &[]);
    assert!(
        m.missing
            .as_deref()
            .is_some_and(|e| e.starts_with("the scrape before the session is not Prometheus text")),
        "{:?}",
        m.missing
    );
}

#[test]
fn a_series_that_went_down_is_a_restart_not_a_difference() {
    // The engine restarted between the scrapes: its counts began again.
    let m = diff(Some(END), Some(START), &[]);
    assert!(m.histograms.is_empty(), "{:?}", m.histograms);
    assert!(m.counters.is_empty(), "{:?}", m.counters);
    assert!(
        m.reset.contains(
            &"vllm:time_to_first_token_seconds{engine=\"0\",model_name=\"tiny-llama\"}".to_string()
        ),
        "{:?}",
        m.reset
    );
    assert!(
        m.reset.contains(
            &"vllm:prompt_tokens_total{engine=\"0\",model_name=\"tiny-llama\"}".to_string()
        )
    );
}

#[test]
fn llama_cpp_counters_with_colons_and_no_labels_are_read() {
    // The shape llama-server's `--metrics` gives: counters and gauges.
    let at = |prompt: u64, predicted: u64| {
        format!(
            "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n\
             # TYPE llamacpp:prompt_tokens_total counter\n\
             llamacpp:prompt_tokens_total {prompt}\n\
             # HELP llamacpp:tokens_predicted_total Number of generation tokens processed.\n\
             # TYPE llamacpp:tokens_predicted_total counter\n\
             llamacpp:tokens_predicted_total {predicted}\n\
             # HELP llamacpp:requests_processing Number of requests processing.\n\
             # TYPE llamacpp:requests_processing gauge\n\
             llamacpp:requests_processing 0\n"
        )
    };
    let m = diff(Some(&at(10, 0)), Some(&at(890, 960)), &[]);
    let grew = grew(&m);
    assert_eq!(
        grew,
        [
            ("llamacpp:prompt_tokens_total", 880.0),
            ("llamacpp:tokens_predicted_total", 960.0)
        ]
    );
    assert!(m.histograms.is_empty());
}

#[test]
fn the_nearest_rank_bucket_is_the_first_that_reaches_the_rank() {
    let h = Hist::of_values(&[1.0, 2.0, f64::INFINITY], &[0.5, 1.5, 1.5, 9.0]);
    // n = 4: p50 is rank 2 → (1, 2]; p90 and p99 rank 4 → (2, +Inf].
    assert_eq!(
        h.quantiles(),
        [
            q(0.5, Some(1.0), 2.0),
            q(0.9, Some(2.0), f64::INFINITY),
            q(0.99, Some(2.0), f64::INFINITY)
        ]
    );
    assert!(Hist::of_values(&[1.0], &[]).quantiles().is_empty());
    assert_eq!(
        ours_for("sglang:time_to_first_token_seconds"),
        Some(Metric::Ttft)
    );
    assert_eq!(
        ours_for("vllm:e2e_request_latency_seconds"),
        Some(Metric::E2e)
    );
    assert_eq!(ours_for("vllm:request_queue_time_seconds"), None);
}

#[test]
fn an_engine_that_started_again_between_the_reads_has_no_difference() {
    let later = END.replace(
        "process_start_time_seconds 1.796529e+09",
        "process_start_time_seconds 1.796529030e+09",
    );
    assert_ne!(later, END);
    let m = diff(Some(START), Some(&later), &[]);
    assert!(
        m.missing
            .as_deref()
            .is_some_and(|e| e.starts_with("the engine restarted between the reads")),
        "{:?}",
        m.missing
    );
    assert!(m.histograms.is_empty() && m.counters.is_empty());
}

#[test]
fn a_family_with_no_sample_is_left_out_and_the_rest_read() {
    // prometheus_client writes the HELP and TYPE of a labelled family no
    // request touched, with nothing under them (the fixture's prefill).
    assert!(END.contains("# TYPE vllm:request_prefill_time_seconds histogram\n# HELP"));
    let m = diff(Some(START), Some(END), &[]);
    assert_eq!(m.missing, None);
    assert!(
        m.histograms
            .iter()
            .all(|h| h.name != "vllm:request_prefill_time_seconds")
    );
    assert_eq!(m.histograms.len(), 3);
}
