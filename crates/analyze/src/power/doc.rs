//! A plan as data: what `firsttoken plan` computed, in the shape the
//! report's plan exporter renders (Markdown and JSON).

use serde::Serialize;

use super::{Detectable, PowerPlan, Support, ToGo, WidthPlan};
use crate::{Metric, Percentile, PhaseKind};

/// One row of the power table: a comparison of two groups.
#[derive(Debug, Clone, Serialize)]
pub struct PowerRow {
    /// What is compared: `v2 vs v1`, or one group planned against its like.
    pub groups: String,
    /// The plan.
    pub plan: PowerPlan,
    /// What is left to send for the n needed (`None` when no n is reached).
    pub to_go: Option<ToGo>,
}

/// One row of the width table: a percentile of one group.
#[derive(Debug, Clone, Serialize)]
pub struct WidthRow {
    /// The group.
    pub group: String,
    /// The plan.
    pub plan: WidthPlan,
    /// What is left to send for the n needed.
    pub to_go: Option<ToGo>,
}

/// One row of the claims table: what a config's count for one phase and
/// destination supports.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimRow {
    /// The phase.
    pub phase: PhaseKind,
    /// Where its requests go (`chat`, `direct`, `chat @ 3 concurrent`).
    pub destination: String,
    /// What its count supports.
    pub support: Support,
    /// Pilot values of the same phase and path in the store (0: none).
    pub pilot_values: usize,
    /// Pilot values needed to plan from.
    pub pilot_needed: usize,
    /// The difference that count detects with the target power, from those
    /// pilot values (`None` without enough of them).
    pub detectable: Option<Detectable>,
    /// Time to send its requests one at a time at the pilot's mean
    /// duration, ms (`None` without pilot rows).
    pub time_ms: Option<f64>,
    /// Cost of its requests at the pilot's mean cost per request of the
    /// same phase and destination, USD (the stored cost: the stream's
    /// `usage.cost` or the price table); `None` without pilot rows that
    /// carry one.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// The claims table's extras: the quantile planned and the protocol's fixed waits.
#[derive(Debug, Clone, Serialize)]
pub struct Claims {
    /// The config file.
    pub config: String,
    /// The quantile whose detectable difference is shown.
    pub quantile: Percentile,
    /// Idle gaps and open-loop spans the protocol waits regardless, ms.
    pub fixed_wait_ms: f64,
    /// One row per phase and destination.
    pub rows: Vec<ClaimRow>,
}

/// Everything `firsttoken plan` prints.
#[derive(Debug, Clone, Serialize)]
pub struct PlanDoc {
    /// The metric planned for.
    pub metric: Metric,
    /// The phase whose rows were the pilot (`None`: every phase).
    pub phase: Option<PhaseKind>,
    /// Sessions the pilot came from.
    pub sessions: Vec<String>,
    /// Power (or probability) target.
    pub target_power: f64,
    /// Confidence level of the report's intervals.
    pub level: f64,
    /// The rank test's α.
    pub alpha: f64,
    /// The comparison's noise threshold (relative median change).
    pub noise_threshold: f64,
    /// Simulated experiments per estimate.
    pub simulations: usize,
    /// Comparisons planned.
    pub power: Vec<PowerRow>,
    /// Percentile widths planned (empty without a width target).
    pub width: Vec<WidthRow>,
    /// What a config's counts support (`--claims`).
    pub claims: Option<Claims>,
}
