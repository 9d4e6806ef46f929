//! The probe's output: one line per request and the summary table (n,
//! min, p50, p90, p99, max per phase), numbers from [`crate::format`].

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, ContentArrangement, Table};
use firsttoken_analyze::RunSummary;
use firsttoken_record::{Phase, Sample};

use crate::format::{Unit, ms, value};

/// One request as a line of text: the phases that happened and the outcome.
pub fn sample_line(s: &Sample) -> String {
    let mut out = String::new();
    let tag = if s.warmup {
        "warm-up".to_string()
    } else {
        format!("#{}", s.seq)
    };
    out.push_str(&format!(
        "{tag:>7} w{:<3} {:<6} ",
        s.worker,
        if s.connection == firsttoken_record::Connection::Fresh {
            "fresh"
        } else {
            "reused"
        }
    ));
    for (name, v) in [
        ("dns", s.dns_ms),
        ("connect", s.connect_ms),
        ("proxy", s.proxy_ms),
        ("tls", s.tls_ms),
        ("sent", s.sent_ms),
        ("ttfb", s.ttfb_ms),
        ("ttfe", s.ttfe_ms),
        ("ttfr", s.ttfr_ms),
        ("ttft", s.ttft_ms),
        ("ttftc", s.ttftc_ms),
        ("last", s.last_token_ms),
        ("e2e", s.e2e_ms),
    ] {
        if let Some(v) = v {
            out.push_str(&format!("{name}={} ", ms(v)));
        }
    }
    // A tool call took part: say which output came first.
    if s.ttftc_ms.is_some()
        && let Some(f) = s.first_output
    {
        out.push_str(&format!("first={} ", f.as_str()));
    }
    if let Some(r) = &s.incomplete_reason {
        out.push_str(&format!("incomplete={r} "));
    }
    if let Some(h) = s.tls.as_ref().and_then(|t| t.handshake) {
        out.push_str(&format!("handshake={} ", h.as_str()));
    }
    if let Some(e) = &s.content_encoding {
        out.push_str(&format!("encoding={e} "));
    }
    if s.retried_stale {
        out.push_str("retried-stale ");
    }
    out.push_str(&format!("chunks={}", s.content_chunks));
    if let Some(n) = s.output_tokens {
        out.push_str(&format!(" tokens={n}"));
    }
    if let Some(t) = s.tokens_per_s {
        out.push_str(&format!(" rate={}", value(Unit::TokS, t)));
    }
    if let Some(p) = s.itl_p50_ms {
        out.push_str(&format!(
            " itl_p50={} itl_p99={}",
            ms(p),
            crate::format::opt(Unit::Ms, s.itl_p99_ms)
        ));
    }
    if let Some(st) = s.status {
        out.push_str(&format!(" status={st}"));
    }
    if let Some(e) = &s.error {
        out.push_str(&format!(" ERROR {}: {}", e.kind.as_str(), e.message));
    }
    out
}

/// A percentile, or `–` where too few values withhold it.
fn withheld(unit: Unit, v: Option<f64>) -> String {
    v.map_or_else(|| crate::format::DASH.to_string(), |v| value(unit, v))
}

/// The summary table: one row per phase that any request reached.
pub fn summary_table(r: &RunSummary) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(100);
    t.set_header(vec!["phase", "n", "min", "p50", "p90", "p99", "max"]);
    for p in &r.phases {
        let Some(s) = p.summary else { continue };
        // Every row is a time in ms except the output rate.
        let unit = if p.phase == Phase::TokensPerS.name() {
            Unit::TokS
        } else {
            Unit::Ms
        };
        t.add_row(vec![
            p.phase.to_string(),
            s.n.to_string(),
            value(unit, s.min),
            withheld(unit, s.p50),
            withheld(unit, s.p90),
            withheld(unit, s.p99),
            value(unit, s.max),
        ]);
    }
    for i in 1..7 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = t.to_string();
    out.push('\n');
    if r.phases
        .iter()
        .filter_map(|p| p.summary)
        .any(|s| s.p99.is_none())
    {
        out.push_str(crate::words::WITHHELD_NOTE);
        out.push('\n');
    }
    out.push_str(&format!(
        "requests: {}  ok: {}  failed: {}  content chunks: {}  output tokens: {}",
        r.requests,
        r.requests - r.failed,
        r.failed,
        r.content_chunks,
        r.output_tokens
            .map(|n| n.to_string())
            .unwrap_or_else(|| "not reported".into())
    ));
    let list = |v: &[(String, usize)]| {
        v.iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !r.handshakes.is_empty() {
        out.push_str(&format!("\nTLS handshakes: {}", list(&r.handshakes)));
    }
    if r.retried_stale > 0 {
        out.push_str(&format!(
            "\nstale keep-alive: {} of {} requests found their reused connection closed and went again on a new one",
            r.retried_stale, r.requests
        ));
    }
    if !r.encodings.is_empty() {
        out.push_str(&format!("\ncontent encoding: {}", list(&r.encodings)));
    }
    if !r.errors.is_empty() {
        out.push_str(&format!("\nerrors: {}", list(&r.errors)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_record::{Connection, ErrorKind, SampleError};

    #[test]
    fn table_lists_reached_phases_only_and_counts_errors() {
        let mut a = Sample::empty(0, 0, Connection::Reused);
        a.ttft_ms = Some(200.0);
        a.e2e_ms = Some(400.0);
        let mut b = Sample::empty(1, 0, Connection::Reused);
        b.error = Some(SampleError {
            kind: ErrorKind::Timeout,
            message: "slow".into(),
        });
        let out = summary_table(&RunSummary::of(&[a, b]));
        assert!(out.contains("ttft") && out.contains("e2e"));
        assert!(!out.contains("dns"), "{out}");
        assert!(out.contains("failed: 1"));
        assert!(out.contains("timeout ×1"));
        assert!(out.lines().all(|l| l.chars().count() <= 100));
    }

    #[test]
    fn a_tool_call_turn_shows_its_stamp_first_output_and_table_row() {
        let mut tool = Sample::empty(0, 0, Connection::Reused);
        tool.ttftc_ms = Some(120.0);
        tool.first_output_ms = Some(120.0);
        tool.first_output = Some(firsttoken_record::FirstOutput::ToolCall);
        tool.e2e_ms = Some(300.0);
        let l = sample_line(&tool);
        assert!(
            l.contains("ttftc=120 ms") && l.contains("first=tool_call"),
            "{l}"
        );
        assert!(!l.contains("ttft="), "{l}");
        let mut text = Sample::empty(1, 0, Connection::Reused);
        text.ttft_ms = Some(200.0);
        text.first_output_ms = Some(200.0);
        text.first_output = Some(firsttoken_record::FirstOutput::Text);
        assert!(!sample_line(&text).contains("first="));
        let only_text = summary_table(&RunSummary::of(std::slice::from_ref(&text)));
        assert!(
            !only_text.contains("first_output"),
            "without a tool call the first output is TTFT: {only_text}"
        );
        let both = summary_table(&RunSummary::of(&[tool, text]));
        let row = both
            .lines()
            .find(|l| l.contains("first_output"))
            .unwrap_or_else(|| panic!("{both}"));
        assert!(row.contains("120 ms") && row.contains("200 ms"), "{row}");
        assert!(both.contains("ttftc"), "{both}");
    }

    #[test]
    fn sample_line_shows_error_and_skips_missing_phases() {
        let mut s = Sample::empty(4, 2, Connection::Fresh);
        s.connect_ms = Some(0.31);
        s.error = Some(SampleError {
            kind: ErrorKind::HttpStatus,
            message: "HTTP 503".into(),
        });
        let l = sample_line(&s);
        assert!(l.contains("#4") && l.contains("connect=0.3 ms") && !l.contains("dns="));
        assert!(l.contains("ERROR http_status: HTTP 503"));
    }

    #[test]
    fn handshakes_stale_retries_and_encodings_are_counted() {
        use firsttoken_record::{HandshakeKind, TlsInfo};
        let tls = |h| TlsInfo {
            version: "TLSv1_3".into(),
            cipher: "TLS13_AES_128_GCM_SHA256".into(),
            kx_group: None,
            handshake: Some(h),
        };
        let mut v = Vec::new();
        for (i, h) in [
            HandshakeKind::Full,
            HandshakeKind::Resumed,
            HandshakeKind::Resumed,
        ]
        .into_iter()
        .enumerate()
        {
            let mut s = Sample::empty(i as u64, 0, Connection::Fresh);
            s.proxy_ms = Some(0.5);
            s.tls = Some(tls(h));
            s.ttft_ms = Some(10.0);
            s.content_encoding = Some("gzip".into());
            s.retried_stale = i == 2;
            v.push(s);
        }
        let line = sample_line(&v[2]);
        assert!(
            line.contains("proxy=0.5 ms")
                && line.contains("handshake=resumed")
                && line.contains("encoding=gzip")
                && line.contains("retried-stale"),
            "{line}"
        );
        let out = summary_table(&RunSummary::of(&v));
        assert!(out.contains("TLS handshakes: full ×1, resumed ×2"), "{out}");
        assert!(out.contains("stale keep-alive: 1 of 3 requests"), "{out}");
        assert!(out.contains("content encoding: gzip ×3"), "{out}");
        assert!(out.contains("proxy"), "{out}");
    }

    #[test]
    fn the_output_rate_row_is_in_tokens_per_second_not_ms() {
        let mut s = Sample::empty(0, 0, Connection::Reused);
        s.ttft_ms = Some(100.0);
        s.tokens_per_s = Some(219.0);
        let out = summary_table(&RunSummary::of(&[s]));
        let row = out
            .lines()
            .find(|l| l.contains("tokens/s"))
            .expect("a tokens/s row");
        assert!(!row.contains(" ms"), "{row}");
        assert!(row.contains("219"), "{row}");
    }
}
