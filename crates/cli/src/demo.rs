//! `firsttoken demo`: the whole story offline on one machine. Starts the
//! provider emulator and two reference apps on loopback, both serving HTTPS
//! (a throwaway CA the sessions trust) on one worker thread with a database
//! [`DB_RTT`] away — `before` with the study's faults (blocking database
//! calls with three extra round trips on the chat path, the keyword router,
//! a cold start, a first-token provider order) and `after` with pooled async
//! access and the corpus router — runs
//! the `article` protocol (scaled down unless `--full`) against both at
//! once (each app with its own emulator), stores everything as `emulated`,
//! prints one screen — the findings with the before/after verdicts, a
//! table per app and the command that prints the full report — and writes
//! the full report as a self-contained HTML page.
//!
//! Each app exports its own OpenTelemetry spans to its session's receiver,
//! so the report splits the overhead and explains the concurrency wall by
//! them.
//!
//! The user's network is emulated too: every request of the sessions, to
//! the app and straight to the provider, passes a [`firsttoken_shape`]
//! relay with the [`NETWORK`] profile, so round trips cost what they cost
//! on a home connection (the app's own link to the provider does not).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use firsttoken_emulator::{Profile, Settings, TruthLog};

use firsttoken_plan::config::{
    AppSection, AuthSection, CleanupSection, ColdSection, ConcurrencySection, Config,
    DirectSection, PathSection, PhasesSection, PingSection, Price, PromptsSection, SessionSection,
    StrategySection, TracesSection,
};
use firsttoken_plan::protocol::preset;
use firsttoken_record::Store;
use firsttoken_refapp::route::{CHAT_QUESTIONS, DOC_QUESTIONS};
use firsttoken_session::{Overrides, SessionSpec};

use crate::measure::{exit_code, run_specs_together, summary_text};
use crate::render::{Format, findings_only, render};

/// `firsttoken demo`.
#[derive(Debug, Args)]
#[command(
    after_help = "Everything runs on 127.0.0.1 with an emulated upstream; results are labelled `emulated`.
Both apps are measured at once: the scaled protocol takes about two minutes on 2 cores; --full runs all 323 requests per app (much longer).
It prints the findings, a table per app, and the command that prints the full report."
)]
pub struct DemoArgs {
    /// Run the article's full protocol (323 requests per app, 30 s idle gaps before cold probes).
    #[arg(long)]
    pub full: bool,
    /// Hidden, for tests: the scaled protocol less what its findings do not
    /// need (the c = 3 bursts, some fresh and ping requests).
    #[arg(long, hide = true, conflicts_with = "full")]
    pub minimal: bool,
    /// Result store.
    #[arg(long, default_value = "firsttoken-demo.db")]
    pub store: String,
    /// Where to write the HTML report.
    #[arg(long, default_value = "firsttoken-demo.html")]
    pub html: PathBuf,
    /// Seed for the emulator and the sessions.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
}

const PROMPTS: [&str; 6] = [
    "What drives the time to first token of a streamed answer?",
    "According to the annual report, what was the operating margin?",
    "Summarise the liquidity policy in two sentences.",
    "Explain keep-alive connections to a new engineer.",
    "What does the quarterly statement say about cash flow?",
    "Give me three tips for faster onboarding.",
];

/// How much of the article's protocol the demo runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    /// `--minimal`: the scaled protocol cut further (tests).
    Minimal,
    /// The default: the same shape at about a fifth of the size.
    Scaled,
    /// `--full`.
    Full,
}

impl DemoArgs {
    fn size(&self) -> Size {
        match (self.full, self.minimal) {
            (true, _) => Size::Full,
            (false, true) => Size::Minimal,
            (false, false) => Size::Scaled,
        }
    }
}

/// The article's protocol (10 ping, 3 cold, 120 warm, 40 fresh, 90 direct —
/// 30 per strategy — and 60 concurrent), or the same shape at about a fifth
/// of the size, or (`--minimal`) less again where the findings allow.
fn phases(size: Size) -> PhasesSection {
    if size == Size::Full {
        // A built-in preset: present by construction.
        preset("article").unwrap_or_default()
    } else if size == Size::Minimal {
        PhasesSection {
            ping: 3,
            // Two per path: the fewest a connection's set-up is estimated from.
            fresh: 6.into(),
            // The scaled phase without c = 3: the wall's verdict and its
            // cause (the handler's own time bounded well below the wait's
            // rise) are judged at the highest level, c = 5, and need its
            // six bursts and thirty requests at c = 1.
            concurrency: Some(ConcurrencySection {
                levels: vec![1, 5],
                requests: 30,
                paths: Some(vec!["chat".into()]),
                mixed: false,
            }),
            // The rest as scaled, the fewest their findings need: the cold
            // probes and the direct requests (below), and twelve warm
            // requests a path for the app's overhead, whose interval must
            // hold its database time (at six a path it only just did).
            ..phases(Size::Scaled)
        }
    } else {
        PhasesSection {
            ping: 5,
            // Four idle-gap probes on the chat path: a cold start is shown
            // only when it repeats (two or more probes beyond the warm
            // requests of the same path), and 4 against 4 is the fewest
            // whose before → after comparison the rank test can decide (at
            // best p = 0.029).
            cold: Some(ColdSection {
                count: 4,
                idle_gap: Duration::from_secs(3),
                paths: Some(vec!["chat".into()]),
            }),
            // Twelve per path: enough for the chat path's three extra
            // database round trips to stand out of the provider's spread.
            warm: 36.into(),
            fresh: 8.into(),
            // Six per strategy: the fewest with which the rank test can
            // separate two providers (5 against 5 is the least; one
            // failed request spare).
            direct: 18,
            // On the chat path only, as the study ran it: one path's bursts,
            // enough of them per level for an interval — and, from the
            // app's spans, for the handler's own time to be bounded well
            // below the wait's rise (six bursts of five at c = 5).
            concurrency: Some(ConcurrencySection {
                levels: vec![1, 3, 5],
                requests: 30,
                paths: Some(vec!["chat".into()]),
                mixed: false,
            }),
            rate: None,
            conversations: None,
            browser: None,
        }
    }
}

fn strategy(name: &str, ignore: &[&str]) -> StrategySection {
    let mut extra = toml::Table::new();
    if !ignore.is_empty() {
        let mut provider = toml::Table::new();
        provider.insert(
            "ignore".into(),
            toml::Value::Array(ignore.iter().map(|s| toml::Value::from(*s)).collect()),
        );
        extra.insert("provider".into(), toml::Value::Table(provider));
    }
    StrategySection {
        name: name.into(),
        extra,
    }
}

/// A demo path with its own prompts and, when given, the route its
/// requests should reach.
fn path(name: &str, path: &str, prompts: &[&str], expect: Option<&str>) -> PathSection {
    let mut p = PathSection::new(name, path, r#"{"message": "{prompt}"}"#, "auto");
    p.prompts = Some(prompts.iter().map(|q| q.to_string()).collect());
    p.expect_route = expect.map(str::to_string);
    p
}

/// The session config of one demo app, built in memory.
/// One session's configuration; `traces` is where its receiver listens for
/// the app's spans.
fn config(
    app: &str,
    cacert: &str,
    emulator: &str,
    app_db: &str,
    traces: &str,
    size: Size,
) -> Config {
    Config {
        session: SessionSection {
            network: Some(NETWORK.link().network_label()),
            timeout: Some(Duration::from_secs(60)),
            emulated: true,
            cacert: Some(cacert.into()),
            ..SessionSection::default()
        },
        app: AppSection {
            base_url: app.into(),
            headers: Default::default(),
            version_path: Some("/version".into()),
            paths: vec![
                path("chat", "/api/chat", CHAT_QUESTIONS, None),
                path("docs", "/api/docs/ask", DOC_QUESTIONS, None),
                path("router", "/api/message", DOC_QUESTIONS, Some("docs")),
            ],
            timing_headers: None,
            browser: None,
            auth: Some(AuthSection {
                signup_path: Some("/api/auth/signup".into()),
                signin_path: None,
                body: r#"{"email": "{email}", "password": "{password}"}"#.into(),
                token_pointer: "/token".into(),
                id_pointer: Some("/user_id".into()),
                accounts: Some(3),
                accounts_env: None,
                accounts_file: None,
                email: None,
                password_env: None,
            }),
            cleanup: Some(CleanupSection {
                database_url: Some(app_db.into()),
                delete_sql: Some("DELETE FROM users WHERE id IN ({ids})".into()),
                count_sql: Some("SELECT count(*) FROM users WHERE id IN ({ids})".into()),
                ..CleanupSection::default()
            }),
        },
        direct: Some(DirectSection {
            url: format!("{emulator}/v1/chat/completions"),
            api_key_env: None,
            model: "emulated-model".into(),
            strategies: vec![
                strategy("default", &[]),
                strategy("ignore-one", &["quickstart"]),
                strategy("ignore-two", &["quickstart", "steady"]),
            ],
        }),
        ping: Some(PingSection {
            url: format!("{app}/health"),
        }),
        prompts: PromptsSection {
            list: PROMPTS.iter().map(|p| p.to_string()).collect(),
            file: None,
        },
        phases: phases(size),
        prices: [(
            "emulated-model".to_string(),
            Price {
                input: 0.50,
                output: 1.50,
            },
        )]
        .into(),
        // The app exports its spans here (as its OTLP endpoint); the
        // report splits the app's overhead by them.
        traces: TracesSection {
            listen: Some(traces.into()),
            ..TracesSection::default()
        },
        engine: None,
    }
}

/// `127.0.0.1:PORT` with a port that was free a moment ago.
fn free_loopback_port() -> anyhow::Result<String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("cannot listen on 127.0.0.1")?;
    Ok(l.local_addr()?.to_string())
}

async fn listen() -> anyhow::Result<(TcpListener, String)> {
    let l = TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot listen on 127.0.0.1")?;
    let base = format!("http://{}", l.local_addr()?);
    Ok((l, base))
}

/// The round-trip time of the modelled database, for both apps: long
/// enough that the "before" app's extra round trips stand out of the noise,
/// short enough that the scaled demo stays near two minutes.
const DB_RTT: Duration = Duration::from_millis(40);

/// The scaled demo's providers keep their medians with a narrower spread
/// (p90 = [`SPREAD_P90`] × the median instead of about 1.6×): at a dozen
/// requests per path, the upstream's own spread would otherwise hide the
/// app's mechanisms that `--full`'s counts show at the built-in spread.
fn narrow_spread(profile: &mut Profile) {
    use firsttoken_emulator::profile::Ttft;
    use firsttoken_emulator::rng::LogNormal;
    for p in &mut profile.providers {
        if let Ttft::LogNormal(l) = &p.ttft {
            let median = l.mu().exp();
            if let Some(n) = LogNormal::from_median_p90(median, median * SPREAD_P90) {
                p.ttft = Ttft::LogNormal(n);
            }
        }
    }
}

/// The scaled demo's provider p90 ÷ median.
const SPREAD_P90: f64 = 1.25;

/// The user's network: a cable connection (RTT 25 ms, 50 Mbit/s).
const NETWORK: firsttoken_shape::Profile = firsttoken_shape::Profile::Cable;

/// A relay with the [`NETWORK`] profile in front of `upstream`
/// (`host:port`); returns it and the URL base clients use (`scheme://`
/// plus the relay's address).
async fn shaped(
    upstream: &str,
    scheme: &str,
    seed: u64,
) -> anyhow::Result<(firsttoken_shape::Relay, String)> {
    let spec = firsttoken_shape::ShapeSpec {
        seed,
        ..firsttoken_shape::ShapeSpec::new(NETWORK.link())
    };
    let listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let relay = firsttoken_shape::Relay::start(listen, upstream, spec)
        .await
        .context("cannot start the network relay")?;
    let base = format!("{scheme}://{}", relay.local_addr());
    Ok((relay, base))
}

/// The "before" app's cold start (after [`COLD_IDLE`] without requests).
const COLD_START: Duration = Duration::from_millis(400);

/// Idle time that counts as a cold start: shorter than the scaled cold
/// phase's idle gap, longer than any gap inside the other phases.
const COLD_IDLE: Duration = Duration::from_secs(2);

/// The reference app's settings. Both apps reach a database `DB_RTT` away
/// and run on one worker thread (a one-vCPU container). "before" has the
/// study's faults: blocking database calls with three extra serial round
/// trips on the chat path, the keyword router, a cold start after idle and
/// a provider order that prefers the fastest first token. "after" has
/// pooled, async access and the corpus router.
fn app_options(
    upstream: &str,
    db: &str,
    label: &str,
    bad: bool,
    ca_out: PathBuf,
    otlp: &str,
) -> firsttoken_refapp::Options {
    use firsttoken_refapp::{DbFaultScope, RouterRule};
    firsttoken_refapp::Options {
        database_url: db.to_string(),
        upstream_url: format!("{upstream}/v1"),
        version_label: Some(label.to_string()),
        db_rtt: DB_RTT,
        worker_threads: Some(1),
        // The study's server handled one request at a time.
        serial: bad,
        blocking_db: bad,
        db_roundtrips: if bad { 3 } else { 0 },
        db_fault_scope: if bad {
            DbFaultScope::ChatPath
        } else {
            DbFaultScope::AllPaths
        },
        router: if bad {
            RouterRule::Keywords
        } else {
            RouterRule::Corpus
        },
        cold_start: bad.then_some(COLD_START),
        cold_start_idle: COLD_IDLE,
        provider_order: if bad {
            vec!["quickstart".into(), "steady".into(), "bulk".into()]
        } else {
            Vec::new()
        },
        tls: Some(firsttoken_refapp::TlsSource::SelfSigned {
            ca_out: Some(ca_out),
        }),
        otlp_endpoint: Some(otlp.into()),
        ..firsttoken_refapp::Options::default()
    }
}

/// Start a reference app on loopback, serving HTTPS with a throwaway CA
/// written to `ca_out` and exporting its spans to `otlp`; returns its base
/// URL.
async fn refapp(
    upstream: &str,
    db: &str,
    label: &str,
    bad: bool,
    ca_out: PathBuf,
    otlp: &str,
    shutdown: &CancellationToken,
) -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let (listener, base) = listen().await?;
    let base = base.replacen("http://", "https://", 1);
    let options = app_options(upstream, db, label, bad, ca_out, otlp);
    let config = firsttoken_refapp::Config::new(options).context("reference app settings")?;
    let state = firsttoken_refapp::AppState::new(config)
        .await
        .context("cannot start the reference app")?;
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        if let Err(e) = firsttoken_refapp::serve(listener, state, stop).await {
            eprintln!("reference app stopped: {e}");
        }
    });
    Ok((base, task))
}

/// One app under test and everything in front of it: its own emulator
/// (the provider), the user's network to the provider and to the app,
/// the app, and its session spec.
struct AppUnderTest {
    label: &'static str,
    spec: SessionSpec,
    /// Kept until the session ends: the relays and tasks stop when dropped
    /// or when the demo's shutdown is cancelled.
    _relays: Vec<firsttoken_shape::Relay>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// The emulator of one app: the built-in provider profile (quickstart,
/// steady, bulk) with short answers, on its own port, so the two apps'
/// direct requests never meet in one provider.
async fn emulator(
    a: &DemoArgs,
    shutdown: &CancellationToken,
) -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let mut profile = Profile::builtin();
    profile.pin_tokens(if a.full { 64 } else { 12 });
    if !a.full {
        narrow_spread(&mut profile);
    }
    let settings = Settings {
        profile: Some(profile),
        seed: a.seed,
        truth: TruthLog::disabled(),
        ..Settings::default()
    };
    let (listener, base) = listen().await?;
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        let _ =
            firsttoken_emulator::serve(listener, firsttoken_emulator::app(settings), None, stop)
                .await;
    });
    Ok((base, task))
}

impl AppUnderTest {
    /// Start `label`'s emulator, app and relays; `bad` is "before".
    async fn start(
        a: &DemoArgs,
        label: &'static str,
        bad: bool,
        work: &std::path::Path,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<AppUnderTest> {
        let (emu_base, emu) = emulator(a, shutdown).await?;
        let (direct_relay, direct_base) =
            shaped(emu_base.trim_start_matches("http://"), "http", a.seed).await?;
        let db = work
            .join(format!("refapp-{label}.db"))
            .display()
            .to_string();
        let ca = work.join(format!("ca-{label}.pem"));
        // Where this session's receiver takes the app's spans: a loopback
        // port free a moment ago (the receiver binds it when the session
        // starts; the app's exporter retries until then).
        let traces = free_loopback_port()?;
        let (origin, app_task) = refapp(
            &emu_base,
            &db,
            label,
            bad,
            ca.clone(),
            &format!("http://{traces}"),
            shutdown,
        )
        .await?;
        let (app_relay, app) = shaped(
            origin.trim_start_matches("https://"),
            "https",
            a.seed.wrapping_add(1),
        )
        .await?;
        let spec = SessionSpec::new(
            config(
                &app,
                &ca.display().to_string(),
                &direct_base,
                &db,
                &traces,
                a.size(),
            ),
            Overrides {
                code_version: Some(label.into()),
                tags: [("demo".to_string(), "true".to_string())].into(),
                seed: Some(a.seed),
                emulated: true,
                store: Some(a.store.clone()),
                ..Overrides::default()
            },
        )?;
        Ok(AppUnderTest {
            label,
            spec,
            _relays: vec![direct_relay, app_relay],
            tasks: vec![emu, app_task],
        })
    }
}

/// Run the demo: both apps measured at once (each with its own provider
/// and network), then one screen — the findings, a table per app, and
/// where the full report and the page are.
pub async fn run(a: DemoArgs) -> anyhow::Result<ExitCode> {
    let work = tempfile::tempdir().context("cannot create a temporary directory")?;
    let shutdown = CancellationToken::new();
    let mut apps = Vec::new();
    for (label, bad) in [("before", true), ("after", false)] {
        apps.push(AppUnderTest::start(&a, label, bad, work.path(), &shutdown).await?);
    }
    if !a.quiet {
        eprintln!(
            "{}",
            firsttoken_report::words::demo::started(
                NETWORK.name(),
                NETWORK.link().added_rtt().as_millis(),
                a.full
            )
        );
    }
    let store = Store::open(&a.store).await?;
    let specs: Vec<(String, SessionSpec)> = apps
        .iter()
        .map(|app| (app.label.to_string(), app.spec.clone()))
        .collect();
    let outcomes = run_specs_together(&specs, &store, a.quiet).await;
    let mut code = ExitCode::SUCCESS;
    let mut finished = Vec::new();
    for ((_, spec), outcome) in specs.iter().zip(outcomes) {
        let outcome = outcome?;
        if !outcome.is_clean() {
            code = exit_code(&outcome);
        }
        finished.push((spec, outcome));
    }
    shutdown.cancel();
    for app in apps {
        for t in app.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(6), t).await;
        }
    }
    let ids: Vec<String> = finished.iter().map(|(_, o)| o.meta.id.clone()).collect();
    let findings = report(&a.store, &ids, &a.html).await?;
    outln!("{findings}");
    for (spec, outcome) in &finished {
        outln!("{}\n", summary_text(spec, outcome));
    }
    if let [before, after] = ids.as_slice() {
        outln!(
            "{}",
            firsttoken_report::words::demo::pointers(
                &firsttoken_record::store::mask_url(&a.store),
                after,
                before,
                &a.html.display().to_string()
            )
        );
    }
    Ok(code)
}

/// The demo's closing report: both sessions grouped by code version and
/// path, with `after` judged against `before` in every app slice and path
/// ([`firsttoken_read::compare::before_after`], as `compare --phase all`
/// does); the findings section returned as terminal text, and the whole
/// report written as the HTML page, both from the same input.
async fn report(store_url: &str, ids: &[String], html: &std::path::Path) -> anyhow::Result<String> {
    use firsttoken_analyze::GroupKey;
    use firsttoken_read::{LoadOptions, Selection, analyse, compare::before_after, load};

    let store = Store::open_existing(store_url).await?;
    let loaded = load(
        &store,
        &Selection::Sessions(ids.to_vec()),
        LoadOptions {
            rows: true,
            ..LoadOptions::default()
        },
    )
    .await?;
    let analysis = analyse(&loaded, &[GroupKey::CodeVersion, GroupKey::Path]);
    let comparisons: Vec<_> = match ids {
        [before, after] => before_after(&loaded, before, after)
            .into_iter()
            .map(|c| c.comparison)
            .collect(),
        _ => Vec::new(),
    };
    let page = render(Format::Html, &loaded, &analysis, &comparisons)?;
    std::fs::write(html, page).with_context(|| format!("cannot write {}", html.display()))?;
    Ok(findings_only(&loaded, &analysis, &comparisons))
}
