//! The words around each report section: its title, its short name in
//! the page's navigation, the sentence that says what it measures (the
//! page's intro) and what it says when it has nothing to show. The
//! layout ([`crate::doc`]) takes them from here for every format.

use crate::doc::SectionId;

/// The words of one section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionWords {
    /// Its heading.
    pub title: &'static str,
    /// Its name in the page's navigation.
    pub nav: &'static str,
    /// What it measures, said under the page's heading.
    pub intro: Option<&'static str>,
    /// What it says when it has nothing to show; `None` for a section that
    /// is always filled or only drawn.
    pub empty: Option<&'static str>,
}

/// The title of the findings section.
pub const FINDINGS_TITLE: &str = "Findings, ranked by the user wait they explain";

/// The title of the server-spans section.
pub const SPANS_TITLE: &str = "Where the time went (server spans)";

/// The words of section `id`.
pub fn section(id: SectionId) -> SectionWords {
    let w = |title, nav, intro, empty| SectionWords {
        title,
        nav,
        intro,
        empty,
    };
    match id {
        SectionId::Run => w(
            "Run",
            "Run",
            Some(
                "The sessions of one run across agents, each running a segment of the same protocol into one store; its requests are pooled from their raw rows, each planned request counted once.",
            ),
            None,
        ),
        SectionId::Findings => w(FINDINGS_TITLE, "Findings", None, Some(super::NO_FINDINGS)),
        SectionId::Sessions => w(
            "Sessions",
            "Sessions",
            None,
            Some("No session metadata was given."),
        ),
        SectionId::Ttft => w(
            "TTFT by group (pooled over sessions, 95% bootstrap CI)",
            "TTFT",
            Some(
                "Successful requests only (warm-ups and failures left out; failures count in the error rate). Each percentile with its 95 % confidence interval, or withheld when there are too few requests behind it (p50 needs 2, p90 10, p95 20, p99 100). Groups pool their sessions; the last column shows how far the sessions' own medians lie apart.",
            ),
            Some("No successful requests with a first token."),
        ),
        SectionId::Typical => w("A typical request", "A typical request", None, None),
        SectionId::Comparisons => w(
            "Comparison",
            "Comparisons",
            Some(
                "A verdict of faster or slower needs all three: a significant rank test, a median difference whose interval excludes zero, and a change larger than the noise threshold.",
            ),
            Some("These sessions offer nothing to compare."),
        ),
        SectionId::Overhead => w(
            "App overhead (app TTFT − direct TTFT)",
            "App overhead",
            Some(
                "How much later the first token arrives through the app than straight from the provider: warm app TTFT − direct TTFT, in sessions that have both.",
            ),
            Some("No session has both app and direct requests."),
        ),
        SectionId::Connection => w(
            "Connection cost (fresh − warm TTFT)",
            "Connection cost",
            Some(
                "What a new connection adds to the first token: fresh − warm TTFT, split into DNS, TCP and TLS.",
            ),
            Some("No fresh-connection requests in these sessions."),
        ),
        SectionId::Concurrency => w(
            "Concurrency wall",
            "Concurrency wall",
            Some("Does the app slow down when k requests arrive together?"),
            Some("No concurrency phase in these sessions."),
        ),
        SectionId::Spans => w(
            SPANS_TITLE,
            "Where the time went",
            Some(
                "The app's OpenTelemetry spans joined to each request by its trace id, with the server's clock offset estimated per session.",
            ),
            None,
        ),
        SectionId::Engine => w(
            "The engine's own clock",
            "The engine's own clock",
            Some(
                "The inference engine's prefill as its stream reports it (llama.cpp's timings.prompt_ms: from its slot starting the prompt to the first sampled token), joined to each request: TTFT = engine prefill + the rest (HTTP parsing, templating, tokenization, any wait for a free slot, the network, the client). Warm requests the server made open a new connection are counted here and left out of every warm figure.",
            ),
            None,
        ),
        SectionId::EngineMetrics => w(
            "The engine's own metrics",
            "Engine metrics",
            Some(
                "The engine's Prometheus metrics read just before each session's first request and just after its last ([engine] metrics_url): what its histograms observed and its counters gained in between, each quantile named by the bucket it falls in. They count every request the engine served meanwhile: every phase, path and warm-up of the session, and any other client's.",
            ),
            None,
        ),
        SectionId::Render => w(
            "Render lag (browser)",
            "Render lag",
            Some(
                "Messages measured in a real browser and stored (firsttoken browse --store), per code version, phase and path: from the first token at the browser's network stack to the animation frame that paints it (docs/METHODOLOGY.md, the painted stamp).",
            ),
            None,
        ),
        SectionId::Cold => w(
            "Cold start",
            "Cold start",
            Some(
                "Each probe sent after an idle gap, against the warm distribution of its sessions.",
            ),
            Some("No cold probes in these sessions."),
        ),
        SectionId::Providers => w(
            "Providers (direct requests)",
            "Providers and routing strategies",
            Some(
                "Direct requests per routing strategy and per provider that served them: first token against throughput.",
            ),
            Some("No direct-to-provider requests in these sessions."),
        ),
        SectionId::Routes => w(
            "Paths and routes",
            "Paths and routes",
            Some(
                "How each app path performs, and whether requests took the route they were meant to.",
            ),
            Some("No app requests with a path in these sessions."),
        ),
        SectionId::Drift => w(
            "Drift",
            "Drift",
            Some(
                "Day-to-day change in warm TTFT, next to the change in ping RTT, so a slower day can be told apart from a slower network.",
            ),
            Some("No warm requests in these sessions."),
        ),
        SectionId::Clock => w(
            "The measuring client's clock",
            "The measuring client's clock",
            Some(
                "Arrivals stamped with the kernel's receive time do not include the client's own lag; the client lag (kernel receive → handled) shows how far behind the client ran.",
            ),
            Some("No session recorded its clock."),
        ),
        SectionId::Limits => w(
            "Claims and limits: what this data cannot support",
            "Claims and limits",
            None,
            Some(super::NO_LIMITS),
        ),
    }
}
