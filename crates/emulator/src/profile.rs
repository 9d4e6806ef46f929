//! The emulator's profile: named upstream providers (time-to-first-token
//! distribution, output speed, prices, faults, serial mode, cold start) and
//! the global defaults, read from TOML and validated into [`Profile`].
//!
//! The built-in default ([`DEFAULT_PROFILE_TOML`], the commented file
//! `profiles/default.toml`) has three providers named for their shape:
//! `quickstart` (TTFT ~150 ms, fast output), `steady` (~400 ms, medium) and
//! `bulk` (~500 ms, ~40 tokens/s, so full answers take 10–14 s).
//!
//! Every error names the origin (file name), the line and column, and the
//! key, e.g. `my.toml: line 12, column 15, key provider.ttft_p90_ms: …`.

use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::EmulatorError;
use crate::faults::{Fault, FaultParams, FaultRates, Stall};
use crate::rng::{LogNormal, Rng};

/// The commented default profile, embedded at compile time.
pub const DEFAULT_PROFILE_TOML: &str = include_str!("../profiles/default.toml");

/// A validated emulator profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The providers, in the order of their tables.
    pub providers: Vec<Provider>,
    /// Default routing order: indexes into `providers`, each once.
    pub order: Vec<usize>,
    /// Fewest content tokens per answer.
    pub tokens_min: u32,
    /// Most content tokens per answer.
    pub tokens_max: u32,
    /// One request at a time across the emulator; the rest queue.
    pub serial: bool,
    /// The emulator-wide cold start.
    pub cold_start: ColdStart,
    /// Global fault rates, drawn for every attempt.
    pub faults: FaultRates,
}

/// An emulated upstream provider.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    /// Its name, as requests' `provider.order` and responses' `provider` spell it.
    pub name: String,
    /// Time from the start of processing to the first content token.
    pub ttft: Ttft,
    /// Time between content tokens (the inverse of the output speed).
    pub itl: Duration,
    /// USD per million prompt tokens.
    pub price_input_per_mtok: f64,
    /// USD per million completion tokens.
    pub price_output_per_mtok: f64,
    /// One request at a time on this provider; the rest queue.
    pub serial: bool,
    /// This provider's cold start.
    pub cold_start: ColdStart,
    /// This provider's fault rates.
    pub faults: FaultRates,
}

/// A time-to-first-token model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ttft {
    /// Always exactly this.
    Fixed(Duration),
    /// Drawn from a log-normal distribution.
    LogNormal(LogNormal),
}

impl Ttft {
    /// One draw; always consumes one normal deviate so that fixing the time
    /// does not shift later draws.
    pub fn sample(&self, rng: &mut Rng) -> Duration {
        match self {
            Ttft::Fixed(d) => {
                let _ = rng.normal();
                *d
            }
            Ttft::LogNormal(dist) => dist.sample(rng),
        }
    }
}

/// Extra time to first token for the first request after an idle gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColdStart {
    /// The extra time (zero: no cold starts).
    pub delay: Duration,
    /// How long without requests makes the next one cold.
    pub idle_gap: Duration,
}

/// Default idle gap after which a request is cold.
pub const DEFAULT_IDLE_GAP: Duration = Duration::from_secs(300);

impl Default for ColdStart {
    fn default() -> Self {
        ColdStart {
            delay: Duration::ZERO,
            idle_gap: DEFAULT_IDLE_GAP,
        }
    }
}

/// USD for `prompt` input and `completion` output tokens at the given
/// prices per million tokens.
pub fn cost_usd(prompt: u32, completion: u32, input_per_mtok: f64, output_per_mtok: f64) -> f64 {
    // One division: (in·p_in + out·p_out)/1e6 equals the sum of the two
    // quotients and rounds once instead of three times.
    (f64::from(prompt) * input_per_mtok + f64::from(completion) * output_per_mtok) / 1e6
}

impl Provider {
    /// USD for `prompt` input and `completion` output tokens.
    pub fn cost_usd(&self, prompt: u32, completion: u32) -> f64 {
        cost_usd(
            prompt,
            completion,
            self.price_input_per_mtok,
            self.price_output_per_mtok,
        )
    }
}

impl Profile {
    /// Parse and validate a profile; `origin` (usually the file name) is
    /// named in errors.
    pub fn from_toml(src: &str, origin: &str) -> Result<Profile, EmulatorError> {
        let raw: RawProfile = toml::from_str(src).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let message = e.message().trim().to_string();
            let key = match named_field(&message) {
                Some(field) => Some(match table_at(src, span.start) {
                    Some(t) => format!("{t}.{field}"),
                    None => field,
                }),
                None => key_at(src, span.start),
            };
            located(src, origin, span, key, message)
        })?;
        Validator { src, origin }.profile(raw)
    }

    /// The built-in default profile ([`DEFAULT_PROFILE_TOML`]).
    pub fn builtin() -> Profile {
        // Invariant: the embedded default is valid; the unit test
        // `default_profile_parses` checks it on every build.
        Profile::from_toml(DEFAULT_PROFILE_TOML, "built-in default profile")
            .expect("the built-in default profile is valid")
    }

    /// A single provider called `emulator` with fixed timing and no faults:
    /// the behaviour of an emulator started without a profile.
    pub fn fixed(ttft: Duration, itl: Duration, tokens: u32) -> Profile {
        Profile {
            providers: vec![Provider {
                name: "emulator".into(),
                ttft: Ttft::Fixed(ttft),
                itl,
                price_input_per_mtok: 0.0,
                price_output_per_mtok: 0.0,
                serial: false,
                cold_start: ColdStart::default(),
                faults: FaultRates::default(),
            }],
            order: vec![0],
            tokens_min: tokens,
            tokens_max: tokens,
            serial: false,
            cold_start: ColdStart::default(),
            faults: FaultRates::default(),
        }
    }

    /// Fix every provider's time to first token.
    pub fn pin_ttft(&mut self, ttft: Duration) {
        for p in &mut self.providers {
            p.ttft = Ttft::Fixed(ttft);
        }
    }

    /// Fix every provider's time between tokens.
    pub fn pin_itl(&mut self, itl: Duration) {
        for p in &mut self.providers {
            p.itl = itl;
        }
    }

    /// Fix the number of content tokens per answer.
    pub fn pin_tokens(&mut self, tokens: u32) {
        self.tokens_min = tokens;
        self.tokens_max = tokens;
    }

    /// The provider called `name`.
    pub fn provider(&self, name: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.name == name)
    }
}

// ---- TOML shapes ----------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    order: Option<Vec<Spanned<String>>>,
    tokens_min: Option<Spanned<i64>>,
    tokens_max: Option<Spanned<i64>>,
    serial: Option<bool>,
    cold_start_ms: Option<Spanned<f64>>,
    idle_gap_s: Option<Spanned<f64>>,
    faults: Option<RawFaults>,
    #[serde(default)]
    provider: Vec<RawProvider>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProvider {
    name: Spanned<String>,
    ttft_median_ms: Spanned<f64>,
    ttft_p90_ms: Option<Spanned<f64>>,
    tokens_per_s: Spanned<f64>,
    price_input_per_mtok: Option<Spanned<f64>>,
    price_output_per_mtok: Option<Spanned<f64>>,
    serial: Option<bool>,
    cold_start_ms: Option<Spanned<f64>>,
    idle_gap_s: Option<Spanned<f64>>,
    faults: Option<RawFaults>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFaults {
    error_rate: Option<Spanned<f64>>,
    error_status: Option<Spanned<i64>>,
    slow_headers_rate: Option<Spanned<f64>>,
    stream_error_rate: Option<Spanned<f64>>,
    drop_rate: Option<Spanned<f64>>,
    stall_rate: Option<Spanned<f64>>,
    after_tokens: Option<Spanned<i64>>,
    stall_ms: Option<Spanned<RawStall>>,
    slow_headers_ms: Option<Spanned<f64>>,
    retry_after_s: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawStall {
    Ms(f64),
    Word(String),
}

// ---- validation -----------------------------------------------------------

struct Validator<'a> {
    src: &'a str,
    origin: &'a str,
}

impl Validator<'_> {
    fn err<T>(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> Result<T, EmulatorError> {
        Err(located(
            self.src,
            self.origin,
            span,
            Some(key.to_string()),
            message.into(),
        ))
    }

    fn ms(&self, v: &Spanned<f64>, key: &str) -> Result<Duration, EmulatorError> {
        let x = *v.get_ref();
        if !x.is_finite() || x < 0.0 {
            return self.err(
                v.span(),
                key,
                format!("must be a non-negative number, got {x}"),
            );
        }
        Ok(Duration::from_secs_f64(x / 1000.0))
    }

    fn secs(&self, v: &Spanned<f64>, key: &str) -> Result<Duration, EmulatorError> {
        let x = *v.get_ref();
        if !x.is_finite() || !(0.0..=1e9).contains(&x) {
            return self.err(
                v.span(),
                key,
                format!("must be a non-negative number of seconds, got {x}"),
            );
        }
        Ok(Duration::from_secs_f64(x))
    }

    fn count(&self, v: &Spanned<i64>, key: &str) -> Result<u32, EmulatorError> {
        u32::try_from(*v.get_ref()).or_else(|_| {
            self.err(
                v.span(),
                key,
                format!("must be a whole number from 0 to {}", u32::MAX),
            )
        })
    }

    fn price(&self, v: Option<&Spanned<f64>>, key: &str) -> Result<f64, EmulatorError> {
        match v {
            None => Ok(0.0),
            Some(v) if v.get_ref().is_finite() && *v.get_ref() >= 0.0 => Ok(*v.get_ref()),
            Some(v) => self.err(
                v.span(),
                key,
                "must be a non-negative number of USD per million tokens",
            ),
        }
    }

    fn rate(&self, v: Option<&Spanned<f64>>, key: &str) -> Result<f64, EmulatorError> {
        match v {
            None => Ok(0.0),
            Some(v) if (0.0..=1.0).contains(v.get_ref()) => Ok(*v.get_ref()),
            Some(v) => self.err(
                v.span(),
                key,
                format!("must be a probability from 0 to 1, got {}", v.get_ref()),
            ),
        }
    }

    fn cold(
        &self,
        delay: Option<&Spanned<f64>>,
        gap: Option<&Spanned<f64>>,
        prefix: &str,
        default_gap: Duration,
    ) -> Result<ColdStart, EmulatorError> {
        Ok(ColdStart {
            delay: match delay {
                Some(v) => self.ms(v, &format!("{prefix}cold_start_ms"))?,
                None => Duration::ZERO,
            },
            idle_gap: match gap {
                Some(v) => self.secs(v, &format!("{prefix}idle_gap_s"))?,
                None => default_gap,
            },
        })
    }

    fn faults(&self, raw: Option<&RawFaults>, prefix: &str) -> Result<FaultRates, EmulatorError> {
        let Some(raw) = raw else {
            return Ok(FaultRates::default());
        };
        let k = |name: &str| format!("{prefix}faults.{name}");
        let error = match &raw.error_status {
            None => Fault::Unavailable,
            Some(v) => match u16::try_from(*v.get_ref())
                .ok()
                .and_then(Fault::from_status)
            {
                Some(f) => f,
                None => {
                    return self.err(
                        v.span(),
                        &k("error_status"),
                        format!("must be 429, 500 or 503, got {}", v.get_ref()),
                    );
                }
            },
        };
        let stall = match &raw.stall_ms {
            None => None,
            Some(v) => match v.get_ref() {
                RawStall::Word(w) if w == "forever" => Some(Stall::Forever),
                RawStall::Ms(x) if x.is_finite() && *x >= 0.0 => {
                    Some(Stall::For(Duration::from_secs_f64(x / 1000.0)))
                }
                _ => {
                    return self.err(
                        v.span(),
                        &k("stall_ms"),
                        "must be a non-negative number of milliseconds or \"forever\"",
                    );
                }
            },
        };
        Ok(FaultRates {
            error_rate: self.rate(raw.error_rate.as_ref(), &k("error_rate"))?,
            error,
            slow_headers_rate: self
                .rate(raw.slow_headers_rate.as_ref(), &k("slow_headers_rate"))?,
            stream_error_rate: self
                .rate(raw.stream_error_rate.as_ref(), &k("stream_error_rate"))?,
            drop_rate: self.rate(raw.drop_rate.as_ref(), &k("drop_rate"))?,
            stall_rate: self.rate(raw.stall_rate.as_ref(), &k("stall_rate"))?,
            params: FaultParams {
                after_tokens: raw
                    .after_tokens
                    .as_ref()
                    .map(|v| self.count(v, &k("after_tokens")))
                    .transpose()?,
                stall,
                slow_headers: raw
                    .slow_headers_ms
                    .as_ref()
                    .map(|v| self.ms(v, &k("slow_headers_ms")))
                    .transpose()?,
                retry_after_s: raw
                    .retry_after_s
                    .as_ref()
                    .map(|v| self.count(v, &k("retry_after_s")))
                    .transpose()?,
                cold_start: None,
            },
        })
    }

    fn provider(&self, raw: &RawProvider, global_gap: Duration) -> Result<Provider, EmulatorError> {
        let name = raw.name.get_ref().trim();
        if name.is_empty() {
            return self.err(raw.name.span(), "provider.name", "must not be empty");
        }
        let median = self.ms(&raw.ttft_median_ms, "provider.ttft_median_ms")?;
        let p90 = match &raw.ttft_p90_ms {
            None => median,
            Some(v) => self.ms(v, "provider.ttft_p90_ms")?,
        };
        let ttft = if p90 == median {
            Ttft::Fixed(median)
        } else {
            let (m, q) = (median.as_secs_f64() * 1000.0, p90.as_secs_f64() * 1000.0);
            match LogNormal::from_median_p90(m, q) {
                Some(d) => Ttft::LogNormal(d),
                None => {
                    let span = raw
                        .ttft_p90_ms
                        .as_ref()
                        .map(Spanned::span)
                        .unwrap_or(raw.ttft_median_ms.span());
                    return self.err(span, "provider.ttft_p90_ms", format!("must be at least ttft_median_ms ({m} ms) and the median above 0, got {q} ms"));
                }
            }
        };
        let tps = *raw.tokens_per_s.get_ref();
        if !(tps.is_finite() && tps > 0.0) {
            return self.err(
                raw.tokens_per_s.span(),
                "provider.tokens_per_s",
                format!("must be above 0, got {tps}"),
            );
        }
        Ok(Provider {
            name: name.to_string(),
            ttft,
            itl: Duration::from_secs_f64(1.0 / tps),
            price_input_per_mtok: self.price(
                raw.price_input_per_mtok.as_ref(),
                "provider.price_input_per_mtok",
            )?,
            price_output_per_mtok: self.price(
                raw.price_output_per_mtok.as_ref(),
                "provider.price_output_per_mtok",
            )?,
            serial: raw.serial.unwrap_or(false),
            cold_start: self.cold(
                raw.cold_start_ms.as_ref(),
                raw.idle_gap_s.as_ref(),
                "provider.",
                global_gap,
            )?,
            faults: self.faults(raw.faults.as_ref(), "provider.")?,
        })
    }

    fn profile(&self, raw: RawProfile) -> Result<Profile, EmulatorError> {
        let cold_start = self.cold(
            raw.cold_start_ms.as_ref(),
            raw.idle_gap_s.as_ref(),
            "",
            DEFAULT_IDLE_GAP,
        )?;
        let mut providers: Vec<Provider> = Vec::with_capacity(raw.provider.len());
        for p in &raw.provider {
            let v = self.provider(p, cold_start.idle_gap)?;
            if providers.iter().any(|q| q.name == v.name) {
                return self.err(
                    p.name.span(),
                    "provider.name",
                    format!("provider {:?} is defined twice", v.name),
                );
            }
            providers.push(v);
        }
        if providers.is_empty() {
            return self.err(
                self.src.len()..self.src.len(),
                "provider",
                "the profile defines no [[provider]]",
            );
        }
        let mut order = Vec::with_capacity(providers.len());
        for name in raw.order.iter().flatten() {
            let Some(i) = providers.iter().position(|p| p.name == *name.get_ref()) else {
                return self.err(
                    name.span(),
                    "order",
                    format!("names {:?}, which no [[provider]] defines", name.get_ref()),
                );
            };
            if order.contains(&i) {
                return self.err(
                    name.span(),
                    "order",
                    format!("names {:?} twice", name.get_ref()),
                );
            }
            order.push(i);
        }
        order.extend(
            (0..providers.len())
                .filter(|i| !order.contains(i))
                .collect::<Vec<_>>(),
        );
        let tokens_min = match &raw.tokens_min {
            Some(v) => self.count(v, "tokens_min")?,
            None => 32,
        };
        let tokens_max = match &raw.tokens_max {
            Some(v) => self.count(v, "tokens_max")?,
            None => tokens_min,
        };
        if tokens_max < tokens_min {
            let span = raw.tokens_max.as_ref().map(Spanned::span).unwrap_or(0..0);
            return self.err(
                span,
                "tokens_max",
                format!("must be at least tokens_min ({tokens_min})"),
            );
        }
        Ok(Profile {
            providers,
            order,
            tokens_min,
            tokens_max,
            serial: raw.serial.unwrap_or(false),
            cold_start,
            faults: self.faults(raw.faults.as_ref(), "")?,
        })
    }
}

// ---- error locations ------------------------------------------------------

fn located(
    src: &str,
    origin: &str,
    span: Range<usize>,
    key: Option<String>,
    message: String,
) -> EmulatorError {
    let at = span.start.min(src.len());
    let before = src.get(..at).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    EmulatorError::Profile {
        origin: origin.to_string(),
        line,
        column,
        key,
        message,
    }
}

/// The field a serde message names: "unknown field `x`", "missing field `x`".
fn named_field(message: &str) -> Option<String> {
    let start = message.find("field `")? + "field `".len();
    let len = message.get(start..)?.find('`')?;
    Some(message.get(start..start + len)?.to_string())
}

/// The start of the line holding byte `at`.
fn line_start(src: &str, at: usize) -> usize {
    let at = at.min(src.len());
    src.get(..at)
        .and_then(|b| b.rfind('\n'))
        .map_or(0, |i| i + 1)
}

/// The nearest `[table]` header at or above the line holding byte `at`.
fn table_at(src: &str, at: usize) -> Option<String> {
    let at = at.min(src.len());
    let end = src.get(at..)?.find('\n').map_or(src.len(), |i| at + i);
    src.get(..end)?.lines().rev().find_map(|l| {
        let l = l.trim();
        l.starts_with('[')
            .then(|| l.trim_matches(|c| c == '[' || c == ']').trim().to_string())
    })
}

/// The dotted key at byte `at`: the `key =` on its line, under the nearest
/// `[table]` header above it.
fn key_at(src: &str, at: usize) -> Option<String> {
    let start = line_start(src, at);
    let line = src.get(start..)?.lines().next().unwrap_or("");
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string());
    let table = table_at(src, at);
    match (table, key) {
        (Some(t), Some(k)) => Some(format!("{t}.{k}")),
        (None, Some(k)) => Some(k),
        (Some(t), None) => Some(t),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_err(src: &str) -> (usize, String, String) {
        match Profile::from_toml(src, "t.toml") {
            Err(EmulatorError::Profile {
                line,
                key,
                message,
                origin,
                ..
            }) => {
                assert_eq!(origin, "t.toml");
                (line, key.unwrap_or_default(), message)
            }
            other => panic!("expected a profile error, got {other:?}"),
        }
    }

    const ONE: &str = "[[provider]]\nname = \"a\"\nttft_median_ms = 100\ntokens_per_s = 50\n";

    #[test]
    fn default_profile_parses() {
        let p = Profile::builtin();
        let names: Vec<&str> = p
            .order
            .iter()
            .map(|&i| p.providers[i].name.as_str())
            .collect();
        assert_eq!(names, ["quickstart", "steady", "bulk"]);
        let bulk = p.provider("bulk").expect("bulk");
        assert_eq!(bulk.itl, Duration::from_millis(25));
        // Full answers take 10–14 s on bulk.
        let shortest = 0.5 + f64::from(p.tokens_min) / 40.0;
        let longest = 0.5 + f64::from(p.tokens_max) / 40.0;
        assert!((9.5..=10.5).contains(&shortest) && (13.5..=14.5).contains(&longest));
        match p.provider("quickstart").expect("quickstart").ttft {
            Ttft::LogNormal(d) => assert!((d.mu().exp() - 150.0).abs() < 1e-9),
            Ttft::Fixed(_) => panic!("quickstart's TTFT should be drawn"),
        }
    }

    #[test]
    fn minimal_profile_and_defaults() {
        let p = Profile::from_toml(ONE, "t.toml").expect("valid");
        assert_eq!(p.providers[0].ttft, Ttft::Fixed(Duration::from_millis(100)));
        assert_eq!(p.providers[0].itl, Duration::from_millis(20));
        assert_eq!((p.tokens_min, p.tokens_max), (32, 32));
        assert_eq!(p.order, [0]);
        assert_eq!(p.faults, FaultRates::default());
    }

    #[test]
    fn cost_arithmetic() {
        let mut p = Profile::from_toml(ONE, "t.toml")
            .expect("valid")
            .providers
            .remove(0);
        p.price_input_per_mtok = 3.0;
        p.price_output_per_mtok = 15.0;
        // 1000·3/1e6 + 2000·15/1e6 = 0.003 + 0.03
        assert!((p.cost_usd(1000, 2000) - 0.033).abs() < 1e-15);
    }

    #[test]
    fn unknown_key_is_named_with_its_line() {
        let src = format!("{ONE}ttft_medain_ms = 3\n");
        let (line, key, msg) = parse_err(&src);
        assert_eq!(line, 5);
        assert_eq!(key, "provider.ttft_medain_ms");
        assert!(msg.contains("unknown field"), "{msg}");
    }

    #[test]
    fn wrong_type_is_named_with_its_line() {
        let src = "[[provider]]\nname = \"a\"\nttft_median_ms = \"fast\"\ntokens_per_s = 50\n";
        let (line, key, _) = parse_err(src);
        assert_eq!(line, 3);
        assert_eq!(key, "provider.ttft_median_ms");
    }

    #[test]
    fn missing_key_is_named() {
        let (_, key, msg) = parse_err("[[provider]]\nname = \"a\"\ntokens_per_s = 50\n");
        assert_eq!(key, "provider.ttft_median_ms");
        assert!(msg.contains("missing field"), "{msg}");
    }

    #[test]
    fn syntax_error_has_a_line() {
        let (line, _, _) = parse_err("tokens_min = 3\n[[provider]\n");
        assert_eq!(line, 2);
    }

    #[test]
    fn validation_errors_point_at_the_value() {
        let src = "[[provider]]\nname = \"a\"\nttft_median_ms = 300\nttft_p90_ms = 100\ntokens_per_s = 50\n";
        let (line, key, msg) = parse_err(src);
        assert_eq!((line, key.as_str()), (4, "provider.ttft_p90_ms"));
        assert!(msg.contains("at least"), "{msg}");

        let src = format!("order = [\"a\", \"zz\"]\n{ONE}");
        let (line, key, msg) = parse_err(&src);
        assert_eq!((line, key.as_str()), (1, "order"));
        assert!(msg.contains("zz"), "{msg}");

        let src = format!("{ONE}[provider.faults]\ndrop_rate = 1.5\n");
        let (line, key, _) = parse_err(&src);
        assert_eq!((line, key.as_str()), (6, "provider.faults.drop_rate"));

        let src = format!("{ONE}[provider.faults]\nerror_status = 404\n");
        let (_, key, _) = parse_err(&src);
        assert_eq!(key, "provider.faults.error_status");

        let (_, key, _) = parse_err("tokens_min = 3\n");
        assert_eq!(key, "provider");

        let src = format!("{ONE}{ONE}");
        let (line, key, msg) = parse_err(&src);
        assert_eq!((line, key.as_str()), (6, "provider.name"));
        assert!(msg.contains("twice"), "{msg}");
    }

    #[test]
    fn error_display_names_file_line_and_key() {
        let err = Profile::from_toml(
            "[[provider]]\nname = \"a\"\nttft_median_ms = 1\ntokens_per_s = 0\n",
            "p.toml",
        )
        .expect_err("tokens_per_s 0");
        let text = err.to_string();
        assert!(
            text.contains("p.toml")
                && text.contains("line 4")
                && text.contains("provider.tokens_per_s"),
            "{text}"
        );
    }

    #[test]
    fn stall_forever_and_pins() {
        let src = format!("{ONE}[provider.faults]\nstall_ms = \"forever\"\n");
        let mut p = Profile::from_toml(&src, "t.toml").expect("valid");
        assert_eq!(p.providers[0].faults.params.stall, Some(Stall::Forever));
        p.pin_ttft(Duration::from_millis(7));
        p.pin_itl(Duration::from_millis(3));
        p.pin_tokens(5);
        assert_eq!(p.providers[0].ttft, Ttft::Fixed(Duration::from_millis(7)));
        assert_eq!(p.providers[0].itl, Duration::from_millis(3));
        assert_eq!((p.tokens_min, p.tokens_max), (5, 5));
    }
}
