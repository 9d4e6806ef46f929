//! Sentences about render lag (painted − network TTFT) and buffering.

use firsttoken_analyze::render::{Buffering, RenderLag};

use crate::format::{Unit, stat};

/// "Render lag (painted − network TTFT), median: 21 ms [20, 22] (n = 30)."
/// The point and interval as measured: a lag is a duration, so it has no
/// direction to claim; a negative interval says the clock link is off.
pub fn render_lag(r: &RenderLag) -> String {
    format!(
        "Render lag (first token painted − first token at the network), median: {} (n = {}).",
        stat(Unit::Ms, &r.median_ms),
        r.n
    )
}

/// The buffering finding, or `None` when the page shows tokens as they come
/// or nothing can be said.
pub fn buffering(b: &Buffering) -> Option<String> {
    match b {
        Buffering::No | Buffering::Unknown => None,
        Buffering::AtEnd => Some(
            "The front end buffers: in most answers nothing was painted until the last token had arrived."
                .into(),
        ),
        Buffering::AfterChunks { median_chunks } => Some(format!(
            "The front end buffers or renders slower than tokens arrive: the first paint came after {} tokens had arrived (median), not the first.",
            crate::format::count(*median_chunks)
        )),
    }
}
