//! The one reading of the values people type into `plan`, `compare` and
//! `check`: durations (`100ms`, `1.5s`, `3s`, a bare number of ms), shares
//! (`10%`, `0.1`), the difference to detect (an [`Effect`]), a phase or
//! `all`, and percentiles (`p95`, `median`: [`Percentile`]'s `FromStr`, in
//! the statistics kernel). One text means one value in every command.
//!
//! [`Percentile`]: crate::Percentile

use std::fmt;

use crate::power::Effect;
use crate::{Metric, PhaseKind};

/// A value that does not read as what was asked for; the message says what
/// was expected (the caller names the flag and the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Not a share.
    #[error("expected a share such as 10% or 0.1")]
    NotAShare,
    /// Not a difference in the metric's unit, nor a share.
    #[error("expected a difference such as 100ms, 1.5s or 10%")]
    NotADifference,
    /// Zero or negative where only a positive value makes sense.
    #[error("must be positive")]
    NotPositive,
}

/// A duration in milliseconds: a number with `ms` or `s` (`100ms`, `1.5s`),
/// a bare number of ms, or anything else humantime reads (`1m 30s`). Any
/// finite value, sign included: the caller says which values make sense.
pub fn duration_ms(s: &str) -> Option<f64> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) => Some(v * scale).filter(|v| v.is_finite()),
        Err(_) => humantime::parse_duration(t)
            .ok()
            .map(|d| d.as_secs_f64() * 1000.0),
    }
}

/// A share as a fraction: `10%` or `0.1` (any finite value; the caller
/// says which make sense).
pub fn share(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|x| x / 100.0),
        None => t.parse::<f64>().ok(),
    }
    .filter(|v| v.is_finite())
}

/// A positive share: `10%` or `0.1` (`--power`, `--width`).
pub fn positive_share(s: &str) -> Result<f64, ValueError> {
    match share(s) {
        None => Err(ValueError::NotAShare),
        Some(v) if v > 0.0 => Ok(v),
        Some(_) => Err(ValueError::NotPositive),
    }
}

impl Effect {
    /// The difference to detect in `metric`: a share of the baseline's
    /// quantile (`10%`: [`Effect::Relative`]) or an amount in the metric's
    /// unit ([`Effect::Absolute`]): a [`duration_ms`] for the timings, a
    /// number of tokens/s (`5` or `5 tok/s`) for
    /// [`Metric::TokensPerS`]. Positive.
    pub fn parse(s: &str, metric: Metric) -> Result<Effect, ValueError> {
        let t = s.trim();
        if t.ends_with('%') {
            return positive_share(t).map(Effect::Relative);
        }
        let v = if metric == Metric::TokensPerS {
            t.strip_suffix("tok/s")
                .unwrap_or(t)
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
        } else {
            duration_ms(t)
        }
        .ok_or(ValueError::NotADifference)?;
        if v > 0.0 {
            Ok(Effect::Absolute(v))
        } else {
            Err(ValueError::NotPositive)
        }
    }
}

/// The phases that have a TTFT (pings have none), in the order `--phase`
/// lists them.
pub const TTFT_PHASES: [PhaseKind; 6] = [
    PhaseKind::Warm,
    PhaseKind::Fresh,
    PhaseKind::Cold,
    PhaseKind::Direct,
    PhaseKind::Concurrency,
    PhaseKind::Rate,
];

/// Every phase, in the order `--phase` lists them: [`TTFT_PHASES`], then
/// ping.
pub const EVERY_PHASE: [PhaseKind; 7] = {
    let mut every = [PhaseKind::Ping; 7];
    let mut i = 0;
    while i < TTFT_PHASES.len() {
        every[i] = TTFT_PHASES[i];
        i += 1;
    }
    every
};

/// A `--phase` value that is not one of the phases offered, nor `all`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown phase {given:?}: use {} or all", Offered(.offered))]
pub struct UnknownPhase {
    /// The text given.
    pub given: String,
    /// The phases the command offers.
    pub offered: Vec<PhaseKind>,
}

/// `warm, fresh, cold`.
struct Offered<'a>(&'a [PhaseKind]);

impl fmt::Display for Offered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(p.as_str())?;
        }
        Ok(())
    }
}

/// A `--phase` value: one of `offered` (its stored name), or `all` —
/// every phase, `None`. A command offers the phases its metric exists in
/// ([`TTFT_PHASES`] for a TTFT comparison, [`EVERY_PHASE`] where the
/// metric is chosen).
pub fn phase_or_all(s: &str, offered: &[PhaseKind]) -> Result<Option<PhaseKind>, UnknownPhase> {
    if s == "all" {
        return Ok(None);
    }
    match s.parse::<PhaseKind>() {
        Ok(p) if offered.contains(&p) => Ok(Some(p)),
        _ => Err(UnknownPhase {
            given: s.to_string(),
            offered: offered.to_vec(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_units_and_bare_milliseconds() {
        assert_eq!(duration_ms("100ms"), Some(100.0));
        assert_eq!(duration_ms("3s"), Some(3000.0));
        assert_eq!(duration_ms("1.5s"), Some(1500.0));
        assert_eq!(duration_ms(" 80 "), Some(80.0));
        assert_eq!(duration_ms("1m 30s"), Some(90_000.0));
        assert_eq!(duration_ms("-5ms"), Some(-5.0));
        assert_eq!(duration_ms("fast"), None);
        assert_eq!(duration_ms("infs"), None);
    }

    #[test]
    fn shares_read_percentages_and_fractions() {
        assert_eq!(share("80%"), Some(0.8));
        assert_eq!(share("0.9"), Some(0.9));
        assert_eq!(share(" 1 % "), Some(0.01));
        assert_eq!(share("0"), Some(0.0));
        assert_eq!(share("most"), None);
        assert_eq!(share("NaN"), None);
        assert_eq!(positive_share("10%"), Ok(0.1));
        assert_eq!(positive_share("0"), Err(ValueError::NotPositive));
        assert_eq!(positive_share("x%"), Err(ValueError::NotAShare));
    }

    #[test]
    fn effects_read_as_amounts_or_shares_of_the_baseline() {
        let ttft = |s| Effect::parse(s, Metric::Ttft);
        assert_eq!(ttft("100ms"), Ok(Effect::Absolute(100.0)));
        assert_eq!(ttft("1.5s"), Ok(Effect::Absolute(1500.0)));
        assert_eq!(ttft("80"), Ok(Effect::Absolute(80.0)));
        assert_eq!(ttft("10%"), Ok(Effect::Relative(0.1)));
        assert_eq!(ttft("-5ms"), Err(ValueError::NotPositive));
        assert_eq!(ttft("0%"), Err(ValueError::NotPositive));
        assert_eq!(ttft("fast"), Err(ValueError::NotADifference));
        assert_eq!(ttft("fast%"), Err(ValueError::NotAShare));
        let tps = |s| Effect::parse(s, Metric::TokensPerS);
        assert_eq!(tps("5 tok/s"), Ok(Effect::Absolute(5.0)));
        assert_eq!(tps("5"), Ok(Effect::Absolute(5.0)));
        // Tokens per second are no duration.
        assert_eq!(tps("100ms"), Err(ValueError::NotADifference));
    }

    #[test]
    fn a_phase_is_one_offered_or_all() {
        assert_eq!(phase_or_all("all", &TTFT_PHASES), Ok(None));
        assert_eq!(
            phase_or_all("cold", &TTFT_PHASES),
            Ok(Some(PhaseKind::Cold))
        );
        assert_eq!(
            phase_or_all("ping", &EVERY_PHASE),
            Ok(Some(PhaseKind::Ping))
        );
        let e = phase_or_all("ping", &TTFT_PHASES).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown phase \"ping\": use warm, fresh, cold, direct, concurrency, rate or all"
        );
        let e = phase_or_all("Warm", &EVERY_PHASE).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown phase \"Warm\": use warm, fresh, cold, direct, concurrency, rate, ping or all"
        );
    }
}
