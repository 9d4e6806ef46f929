//! A session's browser phases (`[phases.browser]` over `[app.browser]`):
//! after the HTTP phases, the app's own page in a real headless Chromium
//! (`firsttoken-browse`): returning visits (`warm`), first visits
//! (`fresh`), several users at once (`concurrency` at each level) and cold
//! probes (a first visit after an idle gap). Each context signs in as one
//! of the session's accounts (`{token}` in its `localStorage` or cookie
//! values, round-robin) or from a storage-state file; each message is
//! stored the moment it is measured, as path `browser`.

use std::time::{Duration, Instant};

use firsttoken_browse::recording::message_row;
use firsttoken_browse::{BrowseSpec, Browser, Cookie, Rounds, SecretValue, SendAction};
use firsttoken_collect::TraceRegistry;
use firsttoken_drive::trace::TraceContext;
use firsttoken_plan::config::{BrowserPhases, BrowserSection, Config};
use firsttoken_record::session::{Provenance, SampleRow};
use firsttoken_record::{PhaseKind, Store};
use tokio_util::sync::CancellationToken;

use crate::{Observer, SessionError, Source, prompt_ref};

/// A value of `[app.browser]`'s `local_storage` or `cookies`: the account's
/// token filled in per context, or a fixed value (from the environment).
#[derive(Clone)]
enum Value {
    Fixed(SecretValue),
    Template(String),
}

/// The browser part of a session, checked before anything is sent.
#[derive(Clone)]
pub(crate) struct BrowserPart {
    /// The spec every context starts from (storage state included).
    base: BrowseSpec,
    phases: BrowserPhases,
    local_storage: Vec<(String, Value)>,
    cookies: Vec<(String, Value)>,
}

/// What the browser part stored and why it stopped.
#[derive(Default)]
pub(crate) struct BrowserDone {
    pub rows: Vec<SampleRow>,
    pub done: u64,
    pub failed: u64,
    /// Why it stopped early (cancelled, the browser or the store failed).
    pub stopped: Option<Stopped>,
}

/// Why the browser part stopped early.
pub(crate) enum Stopped {
    Cancelled,
    Failed(String),
}

fn value(key: &str, v: &str) -> Result<Value, SessionError> {
    match v.strip_prefix('$') {
        Some(name) => std::env::var(name)
            .map(|v| Value::Fixed(SecretValue(v)))
            .map_err(|_| {
                SessionError::Invalid(format!("{key}: the environment variable {name} is not set"))
            }),
        None => Ok(Value::Template(v.to_string())),
    }
}

impl Value {
    fn fill(&self, token: Option<&str>) -> SecretValue {
        match self {
            Value::Fixed(v) => v.clone(),
            Value::Template(t) => SecretValue(t.replace("{token}", token.unwrap_or(""))),
        }
    }
}

impl BrowserPart {
    /// The browser part of `cfg`, `None` when it plans no message. Finds
    /// Chromium, reads the storage-state file and the environment.
    pub(crate) fn new(cfg: &Config) -> Result<Option<BrowserPart>, SessionError> {
        let (Some(b), Some(phases)) = (&cfg.app.browser, &cfg.phases.browser) else {
            return Ok(None);
        };
        if phases.planned() == 0 {
            return Ok(None);
        }
        // `{token}` is an account's: without accounts it would be empty.
        let templated = b.local_storage.iter().chain(&b.cookies);
        if cfg.app.auth.is_none()
            && let Some((k, _)) = templated.into_iter().find(|(_, v)| v.contains("{token}"))
        {
            return Err(SessionError::Invalid(format!(
                "app.browser: {k:?} uses {{token}}, an account's bearer token, but there is no [app.auth] to sign accounts in"
            )));
        }
        let invalid = |key: &str, e: firsttoken_browse::BrowseError| {
            SessionError::Invalid(format!("app.browser.{key}: {e}"))
        };
        let mut base = spec(cfg, b).map_err(|e| match e {
            firsttoken_browse::BrowseError::NoChromium => invalid("chromium", e),
            e => invalid("page", e),
        })?;
        if let Some(path) = &b.storage_state {
            base.add_storage_state(path.as_ref())
                .map_err(|e| invalid("storage_state", e))?;
        }
        let mut local_storage = Vec::new();
        for (k, v) in &b.local_storage {
            local_storage.push((
                k.clone(),
                value(&format!("app.browser.local_storage.{k}"), v)?,
            ));
        }
        let mut cookies = Vec::new();
        for (k, v) in &b.cookies {
            cookies.push((k.clone(), value(&format!("app.browser.cookies.{k}"), v)?));
        }
        Ok(Some(BrowserPart {
            base,
            phases: phases.clone(),
            local_storage,
            cookies,
        }))
    }

    /// Messages planned.
    pub(crate) fn planned(&self) -> u64 {
        self.phases.planned()
    }

    /// The spec of context `k`: signed in as account `k` (round-robin).
    fn spec_for(&self, k: usize, tokens: &[String]) -> BrowseSpec {
        let token = (!tokens.is_empty()).then(|| tokens[k % tokens.len()].as_str());
        let mut s = self.base.clone();
        for (key, v) in &self.local_storage {
            s.local_storage.push((key.clone(), v.fill(token)));
        }
        for (name, v) in &self.cookies {
            s.cookies.push(Cookie::new(name, v.fill(token)));
        }
        s
    }

    /// Run every browser phase, storing each message as it is measured.
    pub(crate) async fn run(
        &self,
        ctx: &Ctx<'_>,
        observer: &mut dyn Observer,
        cancel: &CancellationToken,
    ) -> BrowserDone {
        let mut done = BrowserDone::default();
        let work = self.phases_in_order(ctx, observer, &mut done);
        let stopped = tokio::select! {
            r = work => r.err(),
            _ = cancel.cancelled() => Some(Stopped::Cancelled),
        };
        done.stopped = stopped;
        done
    }

    async fn phases_in_order(
        &self,
        ctx: &Ctx<'_>,
        observer: &mut dyn Observer,
        done: &mut BrowserDone,
    ) -> Result<(), Stopped> {
        let failed =
            |e: firsttoken_browse::BrowseError| Stopped::Failed(format!("the browser: {e}"));
        let browser = Browser::launch(&self.base).await.map_err(failed)?;
        let p = &self.phases;
        let one = |phase, fresh, count| Step {
            phase,
            level: None,
            fresh,
            contexts: 1,
            count,
        };
        let mut plan = Vec::new();
        if p.warm > 0 {
            plan.push(one(PhaseKind::Warm, false, p.warm));
        }
        if p.fresh > 0 {
            plan.push(one(PhaseKind::Fresh, true, p.fresh));
        }
        for &k in &p.levels {
            plan.push(Step {
                phase: PhaseKind::Concurrency,
                level: Some(k),
                fresh: false,
                contexts: k,
                count: p.per_level(k),
            });
        }
        let mut seq = ctx.first_seq;
        for step in plan {
            self.phase(&browser, ctx, observer, done, &mut seq, step)
                .await?;
        }
        if let Some(c) = &p.cold {
            for _ in 0..c.count {
                // Nothing is sent during the gap: the app sits idle.
                tokio::time::sleep(c.idle_gap).await;
                let step = one(PhaseKind::Cold, true, 1);
                self.phase(&browser, ctx, observer, done, &mut seq, step)
                    .await?;
            }
        }
        Ok(())
    }

    async fn phase(
        &self,
        browser: &Browser,
        ctx: &Ctx<'_>,
        observer: &mut dyn Observer,
        done: &mut BrowserDone,
        seq: &mut u64,
        Step {
            phase,
            level,
            fresh,
            contexts,
            count,
        }: Step,
    ) -> Result<(), Stopped> {
        let specs = (0..contexts as usize)
            .map(|k| self.spec_for(k, ctx.tokens))
            .collect();
        let failed =
            |e: firsttoken_browse::BrowseError| Stopped::Failed(format!("the browser: {e}"));
        let mut rounds = Rounds::new(browser, specs, fresh, contexts, count).map_err(failed)?;
        let base_seq = *seq;
        // The session's prompts in turn, over its browser messages.
        let prompts = ctx.source.prompts().max(1);
        let prompt_of = |i: u32| ((base_seq - ctx.first_seq) as usize + i as usize) % prompts;
        let message = |i: u32| {
            let text = ctx.source.prompt(prompt_of(i)).to_string();
            let trace = ctx.traced.then(TraceContext::random).flatten();
            // Registered before it is sent, so the app's spans are kept.
            if let (Some(r), Some(t)) = (ctx.registry, &trace) {
                r.insert_hex(&t.trace_id);
            }
            (text, trace)
        };
        while let Some(round) = rounds.next(message).await.map_err(failed)? {
            for sent in round {
                let sample = sent
                    .measured
                    .to_sample(base_seq + u64::from(sent.index), sent.context);
                let mut row = message_row(
                    ctx.session_id,
                    (phase, level),
                    (sent.began, ctx.origin),
                    ctx.provenance,
                    sample,
                );
                let n = prompt_of(sent.index);
                row.prompt = Some(prompt_ref(n, ctx.source.prompt(n)));
                ctx.store
                    .append_sample(&row)
                    .await
                    .map_err(|e| Stopped::Failed(format!("the store cannot be written: {e}")))?;
                done.done += 1;
                done.failed += u64::from(!row.sample.is_ok());
                observer.recorded(&row, ctx.spent);
                done.rows.push(row);
            }
        }
        *seq += u64::from(count);
        Ok(())
    }
}

/// One browser phase: `count` messages by `contexts` users at once, new
/// contexts for each round when `fresh`, stored in `phase` at `level`.
struct Step {
    phase: PhaseKind,
    level: Option<u32>,
    fresh: bool,
    contexts: u32,
    count: u32,
}

/// Where the browser part's messages go.
pub(crate) struct Ctx<'a> {
    pub store: &'a Store,
    pub session_id: &'a str,
    pub provenance: Provenance,
    pub source: &'a Source,
    pub tokens: &'a [String],
    pub traced: bool,
    pub registry: Option<&'a TraceRegistry>,
    /// The session's start, the origin of `actual_start_ms`.
    pub origin: Instant,
    /// The first message's sequence number (after the HTTP requests').
    pub first_seq: u64,
    /// The budget spent by the HTTP phases, USD (browser messages are not
    /// priced: the page's model is not known).
    pub spent: f64,
}

/// The spec `[app.browser]` describes (no sign-in yet).
fn spec(cfg: &Config, b: &BrowserSection) -> Result<BrowseSpec, firsttoken_browse::BrowseError> {
    let url = if b.page.starts_with('/') {
        format!("{}{}", cfg.app.base_url.trim_end_matches('/'), b.page)
    } else {
        b.page.clone()
    };
    let chromium = b.chromium.as_deref().map(std::path::Path::new);
    let mut s = BrowseSpec::with_chromium(&url, &b.input, &b.answer, chromium)?;
    s.send = match b.send.as_deref() {
        None | Some("enter") => SendAction::Enter,
        Some(sel) => SendAction::Click(sel.to_string()),
    };
    s.request_match = b.request_match.clone();
    s.send_match = b.send_match.clone();
    s.socket_event = b.socket_event.clone();
    s.socket_done = b.socket_done.clone();
    if let Some(f) = &b.format {
        // Checked when the config was validated.
        s.format = f.parse().map_err(|e: firsttoken_plan::PlanError| {
            firsttoken_browse::BrowseError::Spec(e.to_string())
        })?;
    }
    s.allow_hosts = b.allow_hosts.clone();
    s.timeout = b.timeout.unwrap_or(Duration::from_secs(60));
    s.settle = b.settle.unwrap_or(Duration::from_millis(300));
    s.traceparent = cfg.session.traced();
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_without_accounts_is_refused_before_anything_starts() {
        let cfg = Config::parse(
            r##"
[app]
base_url = "http://127.0.0.1:9"
[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{"message": "{prompt}"}'
[app.browser]
page = "/chat"
input = "#m"
answer = ".a"
local_storage = { app_token = "{token}" }
chromium = "/nonexistent/chromium"
[prompts]
list = ["hi"]
[phases.browser]
warm = 1
"##,
            "t.toml",
        )
        .unwrap();
        let e = BrowserPart::new(&cfg).err().expect("refused").to_string();
        assert!(e.contains("app_token") && e.contains("[app.auth]"), "{e}");
    }
}
