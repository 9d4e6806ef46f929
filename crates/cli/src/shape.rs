//! `firsttoken shape`: a network between the user and the app, as a TCP
//! relay on loopback (delay, jitter and a rate limit in each direction).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use firsttoken_shape::{Link, Profile, Rate, ShapeSpec};

#[derive(Debug, Args)]
#[command(after_help = "\
Profiles (RTT = 2 × the one-way delay; the rate applies to each direction):
  fibre              RTT  10 ms, 100 Mbit/s, no jitter
  cable              RTT  25 ms,  50 Mbit/s, ±1 ms jitter
  4g                 RTT  60 ms,  20 Mbit/s, ±5 ms jitter
  congested-mobile   RTT 150 ms,   2 Mbit/s, ±20 ms jitter
--delay-ms, --jitter-ms and --rate override the profile's values.

Each read is held for the one-way delay ± a uniform jitter draw, never overtaking earlier bytes, \
after a token bucket at the rate. TCP's own handshake is not delayed (the kernel completes it), so \
a fresh connection pays the RTT from its first TLS or HTTP round trip on.

The first line on stdout is the address to use instead of the upstream's, e.g. \
`listening on http://127.0.0.1:8091`. Sessions measured through it should say so: \
[session] network = \"emulated:4g\" (the label is printed on stderr).")]
pub struct ShapeArgs {
    /// Address to listen on, loopback only unless --allow-public; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8091")]
    listen: SocketAddr,
    /// Allow a --listen address outside loopback (the relay is then open to the network).
    #[arg(long)]
    allow_public: bool,
    /// Where to relay to: http://HOST:PORT, https://HOST:PORT or HOST:PORT (a path is ignored).
    #[arg(long, value_name = "URL", required_unless_present = "list_profiles")]
    upstream: Option<String>,
    /// A named link: fibre, cable, 4g or congested-mobile.
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
    /// One-way delay in milliseconds, added in each direction (RTT grows by twice this).
    #[arg(long, value_name = "MS")]
    delay_ms: Option<f64>,
    /// Jitter in milliseconds: each read's delay is drawn from delay ± jitter, never reordering bytes.
    #[arg(long, value_name = "MS")]
    jitter_ms: Option<f64>,
    /// Bandwidth per direction, e.g. 20mbit, 512kbit, 1gbit; `unlimited` removes a profile's limit.
    #[arg(long, value_name = "RATE")]
    rate: Option<String>,
    /// Bytes queued per direction and connection before the relay stops reading, in KiB.
    #[arg(long, value_name = "KIB", default_value_t = 256)]
    buffer_kib: usize,
    /// Seed of the jitter draws.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print the profiles and exit.
    #[arg(long)]
    list_profiles: bool,
}

fn millis(what: &str, ms: f64) -> anyhow::Result<Duration> {
    if !ms.is_finite() || ms < 0.0 {
        anyhow::bail!("{what} must be a non-negative number of milliseconds, got {ms}");
    }
    if ms > Link::MAX_DELAY.as_secs_f64() * 1e3 {
        anyhow::bail!("{what} must be at most 10000 ms, got {ms}");
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

/// Where to connect and what scheme clients should use for the relay.
#[derive(Debug, PartialEq, Eq)]
struct Upstream {
    scheme: &'static str,
    authority: String,
}

fn parse_upstream(s: &str) -> anyhow::Result<Upstream> {
    let (scheme, rest, default_port) = if let Some(r) = s.strip_prefix("http://") {
        ("http", r, 80)
    } else if let Some(r) = s.strip_prefix("https://") {
        ("https", r, 443)
    } else if s.contains("://") {
        anyhow::bail!("--upstream {s:?}: the scheme must be http or https");
    } else {
        ("http", s, 0)
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        anyhow::bail!("--upstream {s:?}: expected HOST:PORT or http(s)://HOST:PORT");
    }
    // A port is present when the text after the last ':' is all digits and
    // not inside an IPv6 literal's brackets.
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let authority = match (has_port, default_port) {
        (true, _) => authority.to_string(),
        (false, 0) => anyhow::bail!("--upstream {s:?}: a port is needed (HOST:PORT)"),
        (false, p) => format!("{authority}:{p}"),
    };
    Ok(Upstream { scheme, authority })
}

/// The link from the profile and the overriding flags.
fn link(a: &ShapeArgs) -> anyhow::Result<Link> {
    let mut link = match &a.profile {
        Some(name) => name.parse::<Profile>()?.link(),
        None => Link::NONE,
    };
    if let Some(ms) = a.delay_ms {
        link.delay = millis("--delay-ms", ms)?;
    }
    if let Some(ms) = a.jitter_ms {
        link.jitter = millis("--jitter-ms", ms)?;
    }
    if let Some(r) = &a.rate {
        link.rate = if r.trim().eq_ignore_ascii_case("unlimited") {
            None
        } else {
            Some(r.parse::<Rate>()?)
        };
    }
    Ok(link)
}

fn describe(link: &Link) -> String {
    let rate = link
        .rate
        .map_or("unlimited".to_string(), |r| format!("{r} per direction"));
    format!(
        "one-way delay {:.3} ms (RTT +{:.3} ms), jitter ±{:.3} ms, rate {rate}",
        link.delay.as_secs_f64() * 1e3,
        link.added_rtt().as_secs_f64() * 1e3,
        link.jitter.as_secs_f64() * 1e3,
    )
}

fn list_profiles() {
    outln!("profile            RTT ms  one-way ms  jitter ms  rate");
    for p in Profile::ALL {
        let l = p.link();
        outln!(
            "{:<18} {:>6}  {:>10}  {:>9}  {}",
            p.name(),
            l.added_rtt().as_secs_f64() * 1e3,
            l.delay.as_secs_f64() * 1e3,
            l.jitter.as_secs_f64() * 1e3,
            l.rate.map_or("unlimited".to_string(), |r| r.to_string()),
        );
    }
}

/// Relay until Ctrl-C or SIGTERM.
pub async fn run(a: ShapeArgs) -> anyhow::Result<ExitCode> {
    if a.list_profiles {
        list_profiles();
        return Ok(ExitCode::SUCCESS);
    }
    let upstream = parse_upstream(a.upstream.as_deref().unwrap_or_default())?;
    let link = link(&a)?;
    let spec = ShapeSpec {
        link,
        buffer_bytes: a.buffer_kib.saturating_mul(1024),
        burst_bytes: ShapeSpec::DEFAULT_BURST,
        seed: a.seed,
    };
    spec.validate().context("--buffer-kib or the link")?;
    firsttoken_shape::check_listen(a.listen, a.allow_public)?;
    let listener = tokio::net::TcpListener::bind(a.listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (is another server using it? try --listen 127.0.0.1:0)",
                a.listen
            )
        })?;
    let addr = listener.local_addr()?;
    outln!("listening on {}://{addr}", upstream.scheme);
    eprintln!(
        "shape: relaying to {} with {}; label sessions [session] network = {:?}; Ctrl-C stops",
        upstream.authority,
        describe(&link),
        link.network_label(),
    );
    let shutdown = crate::shutdown_token();
    firsttoken_shape::serve(listener, upstream.authority, spec, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstreams_parse_with_their_scheme_and_port() {
        let u = |s| parse_upstream(s).unwrap();
        assert_eq!(
            u("http://127.0.0.1:8090/v1"),
            Upstream {
                scheme: "http",
                authority: "127.0.0.1:8090".into()
            }
        );
        assert_eq!(u("https://localhost").authority, "localhost:443");
        assert_eq!(u("https://localhost").scheme, "https");
        assert_eq!(u("http://localhost").authority, "localhost:80");
        assert_eq!(u("127.0.0.1:9").authority, "127.0.0.1:9");
        assert_eq!(u("[::1]:9").authority, "[::1]:9");
        assert_eq!(u("http://[::1]").authority, "[::1]:80");
        for bad in ["127.0.0.1", "ftp://x:1", "http://", "http://u@h:1", ""] {
            assert!(parse_upstream(bad).is_err(), "{bad} parsed");
        }
    }
}
