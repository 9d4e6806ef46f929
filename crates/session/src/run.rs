//! [`run_session`]: preflight → session row → test accounts → the executor
//! and the recorder → cleanup → the session's end.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use firsttoken_drive::Slot;
use firsttoken_drive::{Stop, run_session as execute};
use firsttoken_plan::config::AuthMode;
use firsttoken_plan::{RequestTemplate, Target};
use firsttoken_record::session::{
    Cleanup, LAG_FLAG_MS, Labels, SampleRow, SessionMeta, SessionStatus, new_session_id,
};
use firsttoken_record::store::host_name;
use firsttoken_record::{EngineScrape, ScrapeMoment, Store, UtcTime};

use crate::accounts::{Accounts, clean_up, sign_up};
use crate::recorder::{Recorded, Recorder};
use crate::scrape::scrape;
use crate::traces::{self, TraceOutcome};
use crate::{Budget, Observer, SessionError, SessionSpec, Source};
use firsttoken_collect::TraceRegistry;

/// How a session ended. The session row in the store says the same.
#[derive(Debug)]
pub struct Outcome {
    /// The session as finished (status, cleanup, lag).
    pub meta: SessionMeta,
    /// Every stored row, warm-ups included.
    pub rows: Vec<SampleRow>,
    /// Counted requests stored.
    pub done: u64,
    /// Of those, failed ones.
    pub failed: u64,
    /// Requests in flight at an interruption that were abandoned, not stored.
    pub cancelled_in_flight: u64,
    /// What span collection did, when `[traces] listen` was set.
    pub traces: Option<TraceOutcome>,
    /// The engine's metrics read before and after the requests, when
    /// `[engine] metrics_url` was set: each as stored, without its body.
    pub scrapes: Vec<EngineScrape>,
}

impl Outcome {
    /// True when every request succeeded, the session completed and cleanup left nothing.
    pub fn is_clean(&self) -> bool {
        self.failed == 0
            && self.meta.status == SessionStatus::Complete
            && self.meta.cleanup.as_ref().is_none_or(Cleanup::is_clean)
    }

    /// The client's scheduling lag (p99, ms) when it is above
    /// [`LAG_FLAG_MS`]: the open-loop start times are then unreliable.
    pub fn flagged_lag_ms(&self) -> Option<f64> {
        self.meta.client_lag_p99_ms.filter(|l| *l > LAG_FLAG_MS)
    }
}

/// Run one session of `spec`, recording into `store`. `cancel` (Ctrl-C,
/// SIGTERM) stops it cleanly: samples so far stay stored, accounts are
/// cleaned up, the session is marked partial.
///
/// Errors only before the session row exists (the app does not answer, the
/// store refuses the row); after that every problem is in the outcome.
pub async fn run_session(
    spec: &SessionSpec,
    store: &Store,
    observer: &mut dyn Observer,
    cancel: CancellationToken,
) -> Result<Outcome, SessionError> {
    let cfg = &spec.config;
    let mut source = spec.source.clone();
    // Pre-provisioned accounts are read before anything is sent: a missing
    // variable or file stops the session here.
    let signin_accounts = match cfg.app.auth.as_ref().map(|a| a.mode()) {
        Some(Ok(AuthMode::SignIn { accounts, .. })) => crate::signin::read_accounts(accounts)?,
        Some(Err((key, m))) => return Err(SessionError::Invalid(format!("{key}: {m}"))),
        _ => Vec::new(),
    };
    if spec.run.is_some() && spec.browser.is_some() {
        return Err(SessionError::Invalid(
            "phases.browser: a run across agents does not run browser phases; measure the page from one agent (a session of its own)".into(),
        ));
    }
    preflight(&source, spec).await?;
    // Bound before anything is created, so a taken port stops nothing half-way.
    let listener = traces::bind(&cfg.traces).await?;
    let code_version = match &spec.code_version {
        Some(v) => v.clone(),
        None => match &cfg.app.version_path {
            Some(p) => app_version(&source, &cfg.app.base_url, p)
                .await
                .unwrap_or_else(|| "unknown".into()),
            None => "unknown".into(),
        },
    };
    // One agent of a run: its segment, less what earlier sessions of the
    // segment stored, and its clock offset to the store.
    let joined = match &spec.run {
        Some(part) => Some(crate::agent::join(part, &spec.protocol, store).await?),
        None => None,
    };
    let protocol = joined.as_ref().map_or(&spec.protocol, |j| &j.protocol);
    let now = SystemTime::now();
    let mut meta = SessionMeta {
        id: new_session_id(now),
        started_at: UtcTime::from(now),
        ended_at: None,
        status: SessionStatus::Running,
        spec: serde_json::json!({
            "config": serde_json::to_value(cfg).map_err(|e| SessionError::Invalid(format!("the config cannot be stored: {e}")))?,
            "preset": spec.preset,
            "config_path": spec.config_path,
            "planned": protocol.counts().iter().map(|(k, n)| (k.as_str().to_string(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
            "requests": protocol.requests(),
            "browser_planned": spec.browser_planned(),
            "run": match (&spec.run, &joined) {
                (Some(part), Some(j)) => crate::agent::spec_json(part, j),
                _ => serde_json::Value::Null,
            },
        }),
        seed: spec.seed,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        host: host_name(),
        pid: None,
        labels: Labels {
            network: spec.network.clone(),
            code_version,
            vantage: spec.vantage.clone().unwrap_or_else(host_name),
            tags: spec.tags.clone(),
        },
        provenance: spec.provenance,
        cleanup: None,
        client_lag_p99_ms: None,
    };
    store.create_session(&meta).await?;
    let mut began = None;
    // Dropped (stopping the beats) once the session's row is finished, or
    // on any early return.
    let mut _heartbeat = None;
    if let (Some(j), Some(part)) = (&joined, &spec.run) {
        let mut member = j.member.clone();
        member.session_id = meta.id.clone();
        member.heartbeat_at_ms = Some(crate::agent::store_now_ms(member.clock));
        store.add_run_member(&member).await?;
        _heartbeat = Some(crate::agent::Heartbeat::start(
            store.clone(),
            meta.id.clone(),
            member.clock,
            part.heartbeat,
        ));
    }
    // The receiver runs before the first request; every traced request's id
    // is registered before it is sent.
    let registry = listener.as_ref().map(|_| TraceRegistry::new());
    let collecting = listener.map(|l| {
        let registry = registry.clone().unwrap_or_default();
        source.set_trace_registry(registry.clone());
        traces::start(l, &cfg.traces, store, &meta.id, registry)
    });
    observer.started(&meta, protocol.planned() as u64 + spec.browser_planned());

    let mut accounts = Accounts::default();
    let mut failure: Option<String> = None;
    if let Some(auth) = &cfg.app.auth {
        let r = match auth.mode() {
            Ok(AuthMode::SignIn { path, .. }) => crate::signin::sign_in(
                source.app_spec(),
                (&cfg.app.base_url, path),
                auth,
                &signin_accounts,
                &mut accounts.tokens,
                &cancel,
            )
            .await
            .map_err(|e| format!("sign-in to the accounts failed: {e}")),
            _ => sign_up(
                source.app_spec(),
                &cfg.app.base_url,
                auth,
                (store, &meta.id),
                &mut accounts,
                &cancel,
            )
            .await
            .map_err(|e| format!("test-account sign-up failed: {e}")),
        };
        if let Err(e) = r {
            failure = Some(e);
        }
        source.set_tokens(accounts.tokens.clone());
    }
    let app_spec = source.app_spec().clone();
    let source = Arc::new(source);
    let budget = Arc::new(Budget::new(cfg.session.budget_usd));
    let (paths, strategies) = spec.names();
    let recorder = Recorder {
        store,
        session_id: &meta.id,
        provenance: spec.provenance,
        config: cfg,
        paths: &paths,
        strategies: &strategies,
        budget: &budget,
        source: &source,
    };
    let mut stop = Stop::Cancelled;
    let mut cancelled_in_flight = 0;
    let mut recorded = Recorded::default();
    let metrics_url = cfg.engine.as_ref().map(|e| e.metrics_url.as_str());
    // Just before the first request.
    let mut scrapes = Vec::new();
    if failure.is_none()
        && let Some(url) = metrics_url
    {
        match scrape(&source, url, (store, &meta.id), ScrapeMoment::Start).await {
            Ok(row) => scrapes.push(row),
            Err(e) => failure = Some(format!("the store cannot be written: {e}")),
        }
    }
    let origin = std::time::Instant::now();
    if failure.is_none() {
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        let run_cancel = cancel.child_token();
        let runner = {
            let (protocol, source, run_cancel) =
                (protocol.clone(), source.clone(), run_cancel.clone());
            let mut gate: Arc<dyn firsttoken_drive::Gate> = match &spec.pause {
                Some(pause) => pause.gate(budget.clone()),
                None => budget.clone(),
            };
            if let Some(j) = &joined {
                let start = crate::agent::StartGate::new(gate, j.run.start_at, j.member.clock);
                began = Some(start.began.clone());
                gate = Arc::new(start);
            }
            tokio::spawn(async move { execute(&protocol, source, gate, tx, run_cancel).await })
        };
        recorded = recorder.run(rx, &run_cancel, observer).await;
        observer.measured();
        match runner.await {
            Ok(Ok(finished)) => {
                stop = finished.stop;
                cancelled_in_flight = finished.cancelled_in_flight;
            }
            Ok(Err(e)) => failure = Some(format!("the measuring client failed: {e}")),
            Err(e) => failure = Some(format!("the session task stopped: {e}")),
        }
        // The browser phases, once the HTTP phases have all run.
        if let (Some(part), None, Stop::Complete) = (&spec.browser, &failure, &stop) {
            let ctx = crate::browser::Ctx {
                store,
                session_id: &meta.id,
                provenance: spec.provenance,
                source: &source,
                tokens: &accounts.tokens,
                traced: cfg.session.traced(),
                registry: registry.as_ref(),
                origin,
                first_seq: protocol.requests() as u64,
                spent: budget.spent(),
            };
            let b = part.run(&ctx, observer, &cancel).await;
            recorded.done += b.done;
            recorded.failed += b.failed;
            recorded.rows.extend(b.rows);
            match b.stopped {
                Some(crate::browser::Stopped::Cancelled) => stop = Stop::Cancelled,
                Some(crate::browser::Stopped::Failed(e)) => failure = Some(e),
                None => {}
            }
        }
        // Right after the last request, before the spans' grace period.
        if let Some(url) = metrics_url {
            match scrape(&source, url, (store, &meta.id), ScrapeMoment::End).await {
                Ok(row) => scrapes.push(row),
                Err(e) => {
                    failure.get_or_insert_with(|| format!("the store cannot be written: {e}"));
                }
            }
        }
    }
    if let Some(at) = began.as_ref().and_then(|b| b.get())
        && let Err(e) = store.set_run_began(&meta.id, *at).await
    {
        failure.get_or_insert_with(|| format!("the store cannot be written: {e}"));
    }
    if let Some(e) = &recorded.store_error {
        failure = Some(e.clone());
    }
    // The grace period for late spans runs while the accounts are cleaned up.
    let (cleanup, traces) = tokio::join!(finish_accounts(spec, &app_spec, &accounts), async {
        match collecting {
            Some(c) => Some(c.finish().await),
            None => None,
        }
    });
    let lag_p99 = firsttoken_record::percentile(&recorded.lags_ms, 99.0);
    let status = match (&failure, &stop) {
        (Some(f), _) => SessionStatus::Partial { reason: f.clone() },
        (None, Stop::Complete) => SessionStatus::Complete,
        (None, Stop::Budget) => SessionStatus::Partial {
            reason: format!(
                "budget of ${:.4} reached after ${:.4}",
                cfg.session.budget_usd.unwrap_or(0.0),
                budget.spent()
            ),
        },
        (None, Stop::Cancelled) => SessionStatus::Partial {
            reason: match cancelled_in_flight {
                0 => "interrupted (Ctrl-C or SIGTERM)".into(),
                n => format!(
                    "interrupted (Ctrl-C or SIGTERM); {n} requests in flight were cancelled and not stored"
                ),
            },
        },
    };
    meta.status = status.clone();
    let ended_at = UtcTime::now();
    meta.ended_at = Some(ended_at);
    meta.cleanup = cleanup;
    meta.client_lag_p99_ms = lag_p99;
    store
        .finish_session(&meta.id, &status, ended_at, meta.cleanup.as_ref(), lag_p99)
        .await
        .map_err(|source| SessionError::Unfinished {
            session: meta.id.clone(),
            source,
        })?;
    Ok(Outcome {
        meta,
        rows: recorded.rows,
        done: recorded.done,
        failed: recorded.failed,
        cancelled_in_flight,
        traces,
        scrapes,
    })
}

/// Delete the session's accounts as configured, or record why they remain.
async fn finish_accounts(
    spec: &SessionSpec,
    app_spec: &firsttoken_plan::ProbeSpec,
    accounts: &Accounts,
) -> Option<Cleanup> {
    let cfg = &spec.config;
    match (&cfg.app.auth, &cfg.app.cleanup) {
        // Accounts signed in to existed before the session and stay.
        (Some(a), _) if matches!(a.mode(), Ok(AuthMode::SignIn { .. })) => None,
        (Some(_), Some(c)) => Some(
            clean_up(
                c,
                &cfg.app.base_url,
                app_spec,
                &accounts.ids,
                &accounts.tokens,
            )
            .await,
        ),
        (Some(_), None) => Some(Cleanup {
            created_ids: accounts.ids.clone(),
            error: (!accounts.ids.is_empty())
                .then(|| "no [app.cleanup] configured: test accounts were left in the app".into()),
            ..Cleanup::default()
        }),
        _ => None,
    }
}

/// A one-off GET on the app's connection settings with a short deadline.
pub(crate) async fn get(
    source: &Source,
    url: &str,
    timeout: Duration,
) -> Result<(u16, bytes::Bytes), String> {
    let mut spec = source.app_spec().clone();
    let target = Target::parse(url).map_err(|e| e.to_string())?;
    spec.request = RequestTemplate::new(target, Some("GET"), None).map_err(|e| e.to_string())?;
    spec.timeouts.request = timeout;
    let mut slot = Slot::new(&spec).map_err(|e| e.to_string())?;
    slot.fetch(&spec.request).await
}

/// The app's code version from its version endpoint: a JSON string, or an
/// object with `version`, `revision`, `git` or `code_version`.
async fn app_version(source: &Source, base: &str, path: &str) -> Option<String> {
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let (status, body) = get(source, &url, Duration::from_secs(5)).await.ok()?;
    if !(200..300).contains(&status) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
    match &v {
        serde_json::Value::String(s) => Some(s.clone()),
        other => ["version", "revision", "git", "code_version"]
            .iter()
            .find_map(|k| other.get(*k)?.as_str().map(str::to_string)),
    }
}

/// Check the app answers at all, and that its test accounts can be
/// deleted again, before anything is created.
async fn preflight(source: &Source, spec: &SessionSpec) -> Result<(), SessionError> {
    let cfg = &spec.config;
    let url = cfg
        .ping
        .as_ref()
        .map(|p| p.url.clone())
        .unwrap_or_else(|| cfg.app.base_url.clone());
    get(source, &url, Duration::from_secs(10))
        .await
        .map_err(|message| SessionError::Unreachable { url, message })?;
    // Test accounts are created only when they can be deleted again
    // (validation refuses a cleanup beside accounts signed in to).
    if let (Some(_), Some(cleanup)) = (&cfg.app.auth, &cfg.app.cleanup) {
        crate::accounts::check_cleanup(cleanup, &cfg.app.base_url).await?;
    }
    Ok(())
}
