//! Injected faults: what can go wrong with a response, how often (from the
//! profile, globally and per provider) and on demand (from request headers).
//!
//! At most one fault is drawn for each routing attempt. The provider's own
//! table is drawn first, then the global one, each in the fixed order error,
//! slow headers, stream error, drop, stall, always consuming the same number
//! of random draws so a request's later draws do not depend on the rates.

use std::time::Duration;

use axum::http::HeaderMap;

use crate::rng::Rng;

/// One kind of injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// `429 Too Many Requests` with `Retry-After`, before the stream.
    RateLimited,
    /// `500 Internal Server Error`, before the stream.
    ServerError,
    /// `503 Service Unavailable`, before the stream.
    Unavailable,
    /// A `data: {"error": …}` event inside a 200 stream, which then ends
    /// without `[DONE]`.
    StreamError,
    /// The connection is closed mid-stream, without the terminating chunk.
    Drop,
    /// The stream stops sending for a while (or for good) mid-stream.
    Stall,
    /// The status line and headers are held back for a while.
    SlowHeaders,
    /// A cold start: extra time to first token, as after an idle gap.
    Cold,
}

impl Fault {
    /// Every fault, in the order of their names.
    pub const ALL: [Fault; 8] = [
        Fault::RateLimited,
        Fault::ServerError,
        Fault::Unavailable,
        Fault::StreamError,
        Fault::Drop,
        Fault::Stall,
        Fault::SlowHeaders,
        Fault::Cold,
    ];

    /// The name used in the `x-emulator-fault` header and the truth log.
    pub fn name(self) -> &'static str {
        match self {
            Fault::RateLimited => "429",
            Fault::ServerError => "500",
            Fault::Unavailable => "503",
            Fault::StreamError => "stream-error",
            Fault::Drop => "drop",
            Fault::Stall => "stall",
            Fault::SlowHeaders => "slow-headers",
            Fault::Cold => "cold",
        }
    }

    /// The fault called `name` (as [`Fault::name`] spells it).
    pub fn from_name(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name.trim())
    }

    /// The HTTP status of an error response before the stream, or `None`
    /// for faults that do not refuse the request.
    pub fn status(self) -> Option<u16> {
        match self {
            Fault::RateLimited => Some(429),
            Fault::ServerError => Some(500),
            Fault::Unavailable => Some(503),
            _ => None,
        }
    }

    /// The pre-stream error fault answering with `status` (429, 500 or 503).
    pub fn from_status(status: u16) -> Option<Fault> {
        match status {
            429 => Some(Fault::RateLimited),
            500 => Some(Fault::ServerError),
            503 => Some(Fault::Unavailable),
            _ => None,
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How long a stall lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stall {
    /// Resume after this long.
    For(Duration),
    /// Never resume: the client has to give up.
    Forever,
}

/// Fault parameters; unset ones fall back to the next source (request
/// headers, then the provider, then the global table, then the defaults).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultParams {
    /// Content tokens sent before a stream error, drop or stall strikes.
    pub after_tokens: Option<u32>,
    /// Length of a stall.
    pub stall: Option<Stall>,
    /// Delay of the status line for slow headers.
    pub slow_headers: Option<Duration>,
    /// `Retry-After` seconds on a 429.
    pub retry_after_s: Option<u32>,
    /// Extra time to first token for a forced cold start (`x-emulator-fault: cold`).
    pub cold_start: Option<Duration>,
}

impl FaultParams {
    /// `self`'s values, with the gaps filled from `other`.
    pub fn or(&self, other: &FaultParams) -> FaultParams {
        FaultParams {
            after_tokens: self.after_tokens.or(other.after_tokens),
            stall: self.stall.or(other.stall),
            slow_headers: self.slow_headers.or(other.slow_headers),
            retry_after_s: self.retry_after_s.or(other.retry_after_s),
            cold_start: self.cold_start.or(other.cold_start),
        }
    }
}

/// Default content tokens before a mid-stream fault.
pub const DEFAULT_AFTER_TOKENS: u32 = 4;
/// Default stall.
pub const DEFAULT_STALL: Duration = Duration::from_secs(5);
/// Default slow-headers delay.
pub const DEFAULT_SLOW_HEADERS: Duration = Duration::from_secs(2);
/// Default `Retry-After` seconds.
pub const DEFAULT_RETRY_AFTER_S: u32 = 1;
/// Default forced cold start when neither the provider nor the profile has one.
pub const DEFAULT_COLD_START: Duration = Duration::from_secs(1);

/// How often each fault strikes (probabilities per routing attempt, 0 to 1)
/// and with which parameters: one table globally, one per provider.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRates {
    /// Share of attempts refused with `error_status` before the stream.
    pub error_rate: f64,
    /// The refusal: [`Fault::RateLimited`], [`Fault::ServerError`] or [`Fault::Unavailable`].
    pub error: Fault,
    /// Share of responses whose headers are held back.
    pub slow_headers_rate: f64,
    /// Share of streams carrying an error event mid-way.
    pub stream_error_rate: f64,
    /// Share of streams cut mid-way.
    pub drop_rate: f64,
    /// Share of streams that stall mid-way.
    pub stall_rate: f64,
    /// Parameters of the faults this table injects.
    pub params: FaultParams,
}

impl Default for FaultRates {
    fn default() -> Self {
        FaultRates {
            error_rate: 0.0,
            error: Fault::Unavailable,
            slow_headers_rate: 0.0,
            stream_error_rate: 0.0,
            drop_rate: 0.0,
            stall_rate: 0.0,
            params: FaultParams::default(),
        }
    }
}

impl FaultRates {
    /// One draw from this table: five uniforms are always consumed.
    fn draw(&self, rng: &mut Rng) -> Option<Fault> {
        let table = [
            (self.error_rate, self.error),
            (self.slow_headers_rate, Fault::SlowHeaders),
            (self.stream_error_rate, Fault::StreamError),
            (self.drop_rate, Fault::Drop),
            (self.stall_rate, Fault::Stall),
        ];
        let mut hit = None;
        for (p, fault) in table {
            let u = rng.uniform();
            if hit.is_none() && u < p {
                hit = Some(fault);
            }
        }
        hit
    }
}

/// A fault as it will be applied to one response, with resolved parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Applied {
    /// Which fault.
    pub fault: Fault,
    /// Content tokens sent before it strikes (mid-stream faults).
    pub after_tokens: u32,
    /// Stall length.
    pub stall: Stall,
    /// Slow-headers delay.
    pub slow_headers: Duration,
    /// `Retry-After` seconds (429).
    pub retry_after_s: u32,
    /// Forced cold-start delay (cold).
    pub cold_start: Duration,
}

impl Applied {
    /// `fault` with parameters from `params`, defaults filling the gaps.
    pub fn new(fault: Fault, params: &FaultParams) -> Applied {
        Applied {
            fault,
            after_tokens: params.after_tokens.unwrap_or(DEFAULT_AFTER_TOKENS),
            stall: params.stall.unwrap_or(Stall::For(DEFAULT_STALL)),
            slow_headers: params.slow_headers.unwrap_or(DEFAULT_SLOW_HEADERS),
            retry_after_s: params.retry_after_s.unwrap_or(DEFAULT_RETRY_AFTER_S),
            cold_start: params.cold_start.unwrap_or(DEFAULT_COLD_START),
        }
    }
}

/// Draw the fault (if any) for one attempt on a provider: its own table
/// first, then the global one. Ten uniforms are always consumed.
pub fn draw(rng: &mut Rng, provider: &FaultRates, global: &FaultRates) -> Option<Fault> {
    let own = provider.draw(rng);
    let all = global.draw(rng);
    own.or(all)
}

/// A fault asked for by request headers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeaderFaults {
    /// `x-emulator-fault`.
    pub fault: Option<Fault>,
    /// `x-emulator-fault-provider`: the provider it hits (default: the first
    /// one tried).
    pub provider: Option<String>,
    /// Parameters from `x-emulator-fault-after-tokens`, `x-emulator-stall-ms`,
    /// `x-emulator-slow-headers-ms`, `x-emulator-retry-after-s`,
    /// `x-emulator-cold-start-ms`; they also shape faults drawn from the profile.
    pub params: FaultParams,
}

impl HeaderFaults {
    /// Whether the header fault hits attempt `attempt` on `provider`.
    pub fn hits(&self, attempt: usize, provider: &str) -> Option<Fault> {
        let fault = self.fault?;
        let target = match &self.provider {
            Some(p) => p == provider,
            None => attempt == 0,
        };
        target.then_some(fault)
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.trim()))
            .map_err(|_| format!("header {name} must be visible ASCII")),
    }
}

fn header_ms(headers: &HeaderMap, name: &str) -> Result<Option<Duration>, String> {
    let Some(s) = header_str(headers, name)? else {
        return Ok(None);
    };
    s.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|ms| Some(Duration::from_secs_f64(ms / 1000.0)))
        .ok_or_else(|| format!("header {name} must be a non-negative number of milliseconds"))
}

fn header_u32(headers: &HeaderMap, name: &str) -> Result<Option<u32>, String> {
    let Some(s) = header_str(headers, name)? else {
        return Ok(None);
    };
    s.parse::<u32>()
        .map(Some)
        .map_err(|_| format!("header {name} must be a non-negative integer"))
}

/// Read the fault headers of a request; the message says what is wrong.
pub fn from_headers(headers: &HeaderMap) -> Result<HeaderFaults, String> {
    let fault = match header_str(headers, "x-emulator-fault")? {
        None | Some("") | Some("none") => None,
        Some(name) => Some(Fault::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = Fault::ALL.iter().map(|f| f.name()).collect();
            format!(
                "header x-emulator-fault: unknown fault {name:?}; known: {}",
                names.join(", ")
            )
        })?),
    };
    let stall = match header_str(headers, "x-emulator-stall-ms")? {
        Some("forever") => Some(Stall::Forever),
        _ => header_ms(headers, "x-emulator-stall-ms")?.map(Stall::For),
    };
    Ok(HeaderFaults {
        fault,
        provider: header_str(headers, "x-emulator-fault-provider")?.map(str::to_string),
        params: FaultParams {
            after_tokens: header_u32(headers, "x-emulator-fault-after-tokens")?,
            stall,
            slow_headers: header_ms(headers, "x-emulator-slow-headers-ms")?,
            retry_after_s: header_u32(headers, "x-emulator-retry-after-s")?,
            cold_start: header_ms(headers, "x-emulator-cold-start-ms")?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn names_round_trip() {
        for f in Fault::ALL {
            assert_eq!(Fault::from_name(f.name()), Some(f));
        }
        assert_eq!(Fault::from_name("nope"), None);
        assert_eq!(Fault::from_status(429), Some(Fault::RateLimited));
        assert_eq!(Fault::RateLimited.status(), Some(429));
        assert_eq!(Fault::Drop.status(), None);
    }

    #[test]
    fn draws_respect_certainty_and_never() {
        let never = FaultRates::default();
        let always_drop = FaultRates {
            drop_rate: 1.0,
            ..FaultRates::default()
        };
        for seq in 0..50 {
            let mut r = Rng::for_request(1, seq, 0);
            assert_eq!(draw(&mut r, &never, &never), None);
            let mut r = Rng::for_request(1, seq, 0);
            assert_eq!(draw(&mut r, &never, &always_drop), Some(Fault::Drop));
        }
    }

    #[test]
    fn draws_consume_a_fixed_number_of_uniforms() {
        let a = FaultRates {
            error_rate: 1.0,
            ..FaultRates::default()
        };
        let b = FaultRates::default();
        let mut r1 = Rng::new(3);
        let mut r2 = Rng::new(3);
        let _ = draw(&mut r1, &a, &b);
        let _ = draw(&mut r2, &b, &b);
        assert_eq!(r1.next_u64(), r2.next_u64());
    }

    #[test]
    fn headers_parse() {
        let mut h = HeaderMap::new();
        h.insert("x-emulator-fault", HeaderValue::from_static("stall"));
        h.insert("x-emulator-stall-ms", HeaderValue::from_static("forever"));
        h.insert(
            "x-emulator-fault-after-tokens",
            HeaderValue::from_static("2"),
        );
        h.insert(
            "x-emulator-fault-provider",
            HeaderValue::from_static("bulk"),
        );
        let f = from_headers(&h).expect("valid");
        assert_eq!(f.fault, Some(Fault::Stall));
        assert_eq!(f.params.stall, Some(Stall::Forever));
        assert_eq!(f.params.after_tokens, Some(2));
        assert_eq!(f.hits(0, "quickstart"), None);
        assert_eq!(f.hits(1, "bulk"), Some(Fault::Stall));

        h.insert("x-emulator-fault", HeaderValue::from_static("explode"));
        assert!(from_headers(&h).unwrap_err().contains("explode"));
        let mut h = HeaderMap::new();
        h.insert("x-emulator-stall-ms", HeaderValue::from_static("-3"));
        assert!(from_headers(&h).is_err());
    }

    #[test]
    fn params_fill_gaps_in_order() {
        let a = FaultParams {
            after_tokens: Some(1),
            ..FaultParams::default()
        };
        let b = FaultParams {
            after_tokens: Some(9),
            retry_after_s: Some(7),
            ..FaultParams::default()
        };
        let m = a.or(&b);
        assert_eq!(m.after_tokens, Some(1));
        assert_eq!(m.retry_after_s, Some(7));
        let applied = Applied::new(Fault::Stall, &m);
        assert_eq!(applied.stall, Stall::For(DEFAULT_STALL));
    }
}
