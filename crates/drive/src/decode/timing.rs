//! The app's own timing: `Server-Timing` (headers and SSE events) and
//! the configured total-time headers (`x-process-time`…), bounded.

/// At most this many Server-Timing entries are kept for one response
/// (headers and stream events together): a server that sends thousands
/// (48 KB a sample) cannot bloat the store.
pub const MAX_SERVER_TIMING: usize = 32;
/// Longest Server-Timing name kept, in bytes.
pub const MAX_TIMING_NAME: usize = 64;
/// Largest Server-Timing duration kept, ms (a day).
pub const MAX_TIMING_MS: f64 = 86_400_000.0;

/// Parse a `Server-Timing` value (`name;dur=12.5;desc="…", other;dur=3`)
/// into `(name, ms)` pairs; entries without `dur`, with a negative,
/// non-finite or over-a-day duration, or with a name over
/// [`MAX_TIMING_NAME`] bytes are skipped, and at most
/// [`MAX_SERVER_TIMING`] are kept.
pub fn parse_server_timing(value: &str) -> Vec<(String, f64)> {
    value
        .split(',')
        .filter_map(|entry| {
            let mut parts = entry.split(';');
            let name = parts.next()?.trim();
            let dur = parts.find_map(|p| {
                p.trim()
                    .strip_prefix("dur=")
                    .and_then(|d| d.trim_matches('"').parse::<f64>().ok())
            })?;
            let sane = dur.is_finite() && (0.0..=MAX_TIMING_MS).contains(&dur);
            (sane && !name.is_empty() && name.len() <= MAX_TIMING_NAME)
                .then(|| (name.to_string(), dur))
        })
        .take(MAX_SERVER_TIMING)
        .collect()
}

/// The total server time an app reported in each of `headers` it sent
/// (`x-process-time: 0.0123`…), in ms, as `(header:<name>, ms)` pairs
/// ([`firsttoken_record::header_timing_name`]). A header sent twice, a
/// value that is no number (with its unit or in the header's configured
/// one), negative or over [`MAX_TIMING_MS`] is skipped.
pub fn timing_headers(
    headers: &http::HeaderMap,
    wanted: &[firsttoken_plan::TimingHeader],
) -> Vec<(String, f64)> {
    wanted
        .iter()
        .filter_map(|h| {
            let mut values = headers.get_all(h.name.as_str()).iter();
            let (Some(v), None) = (values.next(), values.next()) else {
                return None;
            };
            let ms = h.unit.parse_ms(v.to_str().ok()?)?;
            (ms <= MAX_TIMING_MS).then(|| (firsttoken_record::header_timing_name(&h.name), ms))
        })
        .collect()
}
