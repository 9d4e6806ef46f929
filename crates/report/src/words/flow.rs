//! The words of flows: where the wait before a flow's first token goes.

use firsttoken_analyze::flows::{FlowPartKind, FlowShares};

use crate::format::{self, Unit};

/// The caption of the flow table.
pub const CAPTION: &str = "flows: the wait from the flow's start (the user's action, before its first step) to the first token, split by part; a share is the part's mean over the mean wait of the same requests (the TTFT table above times a flow's measured request from its own start)";

/// A flow group's label: path, phase, level, provenance.
pub fn label(f: &FlowShares) -> String {
    let level = f
        .concurrency
        .map_or_else(String::new, |c| format!(" at {c} concurrent"));
    format!(
        "{}, {}{level} ({})",
        f.path,
        f.phase.as_str(),
        f.provenance.as_str()
    )
}

/// A part's name.
pub fn part(k: &FlowPartKind) -> String {
    match k {
        FlowPartKind::Step(name) => format!("step {name}"),
        FlowPartKind::Between => "between steps".into(),
        FlowPartKind::Measured => "measured request to its first token".into(),
    }
}

/// The row naming the whole wait.
pub const WHOLE: &str = "flow TTFT (the user's wait)";

/// One sentence a flow group: its wait and each part's share of it.
pub fn sentence(f: &FlowShares) -> String {
    let shares = f
        .parts
        .iter()
        .map(|p| format!("{} {}", part(&p.kind), format::percent(Some(p.share))))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{}: from the flow's start to the first token, median {} over {} request{}; \
         of that wait, on average: {shares}.",
        label(f),
        format::stat(Unit::Ms, &f.flow_ttft),
        f.n,
        if f.n == 1 { "" } else { "s" },
    )
}
