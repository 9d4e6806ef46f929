//! Turning the config into requests: one connection spec per destination
//! and a request per planned step (prompt substituted, auth and API key set).

use bytes::Bytes;
use http::{HeaderName, HeaderValue};

use firsttoken_collect::TraceRegistry;
use firsttoken_drive::RequestSource;
use firsttoken_drive::trace::TraceContext;
use firsttoken_plan::config::Config;
use firsttoken_plan::config::HistoryMode;
use firsttoken_plan::env::expand_env;
use firsttoken_plan::flow::{Capture, Flow, FlowSocket, FlowStep, Turn, TurnHistory};
use firsttoken_plan::protocol::{Dest, Planned};
use firsttoken_plan::{ProbeSpec, RequestTemplate, StreamFormat, Target};
use firsttoken_record::session::PromptRef;

use crate::SessionError;

/// Everything needed to build any request of the session.
#[derive(Clone)]
pub struct Source {
    app: Vec<ProbeSpec>,
    direct: Vec<(ProbeSpec, serde_json::Value)>,
    ping: Option<ProbeSpec>,
    direct_model: Option<String>,
    prompts: Vec<String>,
    /// Per app path, its own prompts (empty: it uses `prompts`).
    path_prompts: Vec<Vec<String>>,
    /// Bearer tokens of the session's test accounts, rotated over requests.
    tokens: Vec<String>,
    /// Per app path: its requests carry no token.
    anonymous: Vec<bool>,
    /// Per app path: the earlier steps of its flow (empty: one request).
    flows: Vec<Vec<FlowStep>>,
    /// Per app path: the socket its flow opens first, on which the answer
    /// arrives (`[app.paths.answer_socket]`).
    sockets: Vec<Option<FlowSocket>>,
    /// Per app path: its conversations (each its turns) and how their
    /// history reaches the app (`[app.paths.conversation]`).
    conversations: Vec<Option<(Vec<Vec<String>>, TurnHistory)>>,
    /// Where the trace id of every traced request is registered, when a
    /// span receiver runs.
    traces: Option<TraceRegistry>,
}

/// JSON-escape `s` for use inside a JSON string literal.
fn json_escape(s: &str) -> String {
    let quoted = serde_json::Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// Fill `{name}` placeholders of a body template with JSON-escaped values.
pub fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), &json_escape(v));
    }
    out
}

fn sensitive(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), SessionError> {
    let bad = || {
        SessionError::Invalid(format!(
            "the {name} header has characters a header cannot carry"
        ))
    };
    let mut v = HeaderValue::from_str(value).map_err(|_| bad())?;
    v.set_sensitive(true);
    Ok((
        HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?,
        v,
    ))
}

fn base_spec(
    url: &str,
    format: StreamFormat,
    timeout: Option<std::time::Duration>,
    compressed: bool,
    body: bool,
    session: &firsttoken_plan::config::SessionSection,
) -> Result<ProbeSpec, SessionError> {
    let proxy = session.proxy.as_deref();
    let target = Target::parse(url)?;
    let proxy = firsttoken_plan::proxy::choose(&target, proxy, |n| std::env::var(n).ok())?;
    let request = RequestTemplate::new(target, None, body.then(Bytes::new))?;
    let mut spec = ProbeSpec::new(request);
    spec.proxy = proxy;
    spec.format = format;
    spec.compressed = compressed;
    spec.trace_context = session.traced();
    spec.tls.resume = session.tls_resume;
    if let Some(n) = session.max_event_bytes {
        spec.max_event_bytes = n;
    }
    if let Some(t) = timeout {
        spec.timeouts.request = t;
    }
    Ok(spec)
}

/// A prompt list: `list`, then the lines of `file` (blank lines skipped).
fn read_prompts(list: &[String], file: Option<&str>) -> Result<Vec<String>, SessionError> {
    let mut prompts = list.to_vec();
    if let Some(file) = file {
        let text = std::fs::read_to_string(file).map_err(|source| SessionError::Read {
            path: format!("the prompts file {file}"),
            source,
        })?;
        prompts.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string),
        );
    }
    Ok(prompts)
}

/// The identity of a prompt: its index in its list and the first 12 hex
/// digits of the SHA-256 of its text (never the text itself).
pub fn prompt_ref(index: usize, text: &str) -> PromptRef {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    PromptRef {
        index: u32::try_from(index).unwrap_or(u32::MAX),
        hash,
    }
}

impl Source {
    /// Build from a validated config; reads prompts from their files and the API key from its env var.
    pub fn new(cfg: &Config) -> Result<Source, SessionError> {
        let prompts = read_prompts(&cfg.prompts.list, cfg.prompts.file.as_deref())?;
        if prompts.is_empty() {
            return Err(SessionError::Invalid(
                "no prompts: prompts.list is empty and prompts.file has no lines".into(),
            ));
        }
        let mut path_prompts = Vec::new();
        for p in &cfg.app.paths {
            let own = match (&p.prompts, &p.prompts_file) {
                (None, None) => Vec::new(),
                (list, file) => {
                    let v = read_prompts(list.as_deref().unwrap_or(&[]), file.as_deref())?;
                    if v.is_empty() {
                        return Err(SessionError::Invalid(format!(
                            "no prompts for path {:?}: its prompts list is empty and its prompts_file has no lines",
                            p.name
                        )));
                    }
                    v
                }
            };
            path_prompts.push(own);
        }
        let mut conversations = Vec::new();
        for p in &cfg.app.paths {
            conversations.push(match &p.conversation {
                None => None,
                Some(c) => {
                    let history = match c.history {
                        HistoryMode::Messages => TurnHistory::Messages {
                            pointer: c.pointer().to_string(),
                        },
                        HistoryMode::App => TurnHistory::App,
                    };
                    Some((crate::conversations::read(&c.file)?, history))
                }
            });
        }
        let timeout = cfg.session.timeout;
        let compressed = cfg.session.compressed;
        let base = cfg.app.base_url.trim_end_matches('/');
        let ca_pem = match &cfg.session.cacert {
            Some(file) => Some(std::fs::read(file).map_err(|source| SessionError::Read {
                path: format!("the CA file {file}"),
                source,
            })?),
            None => None,
        };
        let mut app = Vec::new();
        let mut flows = Vec::new();
        let mut sockets = Vec::new();
        for p in &cfg.app.paths {
            let mut spec = base_spec(
                &format!("{base}{}", untemplated(&p.path)),
                p.format.parse()?,
                timeout,
                compressed,
                true,
                &cfg.session,
            )?;
            if !firsttoken_plan::flow::placeholders(&p.path).is_empty() {
                spec.request.target.path_and_query = joined(base, &p.path)?;
            }
            spec.route_field.clone_from(&p.route_field);
            if let Some(w) = &p.websocket {
                let mut ws = w.spec();
                // A token in the auth payload comes from the environment.
                if let Some(a) = ws.socketio.as_mut().and_then(|s| s.auth.as_mut()) {
                    *a = expand_env(a)?;
                }
                spec.transport = firsttoken_plan::Transport::WebSocket(ws);
            }
            spec.timing_headers = cfg.app.timing_headers();
            if let Some(h) = &p.route_header {
                spec.route_header = h.to_ascii_lowercase();
            }
            for (k, v) in &cfg.app.headers {
                let line = format!("{k}: {}", expand_env(v)?);
                // A value from the environment is a secret, whatever the
                // header's name: never printed, and scrubbed if echoed.
                if v.contains('$') {
                    spec.request.add_secret_header_line(&line)?;
                } else {
                    spec.request.add_header_line(&line)?;
                }
            }
            spec.request.body = Some(Bytes::from(p.body.clone()));
            if let Some(m) = &p.method {
                let r = RequestTemplate::new(spec.request.target.clone(), Some(m), None)?;
                spec.request.method = r.method;
                if matches!(spec.request.method, http::Method::GET | http::Method::HEAD) {
                    spec.request.body = None;
                }
            }
            spec.tls.ca_pem.clone_from(&ca_pem);
            let mut steps = Vec::new();
            for st in &p.steps {
                let mut r = RequestTemplate::new(
                    spec.request.target.clone(),
                    st.method.as_deref(),
                    st.body.as_ref().map(|b| Bytes::from(b.clone())),
                )?;
                r.target.path_and_query = joined(base, &st.path)?;
                // The app's headers (secrets kept secret), then the step's own.
                r.headers.clone_from(&spec.request.headers);
                for (k, v) in &st.headers {
                    let line = format!("{k}: {}", expand_env(v)?);
                    if v.contains('$') {
                        r.add_secret_header_line(&line)?;
                    } else {
                        r.add_header_line(&line)?;
                    }
                }
                steps.push(FlowStep {
                    name: st.name.clone(),
                    request: r,
                    captures: st
                        .capture
                        .iter()
                        .map(|(var, from)| {
                            Ok(Capture {
                                var: var.clone(),
                                from: from.parse().map_err(SessionError::Invalid)?,
                            })
                        })
                        .collect::<Result<_, SessionError>>()?,
                });
            }
            flows.push(steps);
            sockets.push(match &p.answer_socket {
                None => None,
                Some(sock) => {
                    let mut s = base_spec(
                        &format!("{base}{}", sock.path),
                        spec.format.clone(),
                        timeout,
                        false,
                        false,
                        &cfg.session,
                    )?;
                    s.max_event_bytes = spec.max_event_bytes;
                    s.tls.ca_pem.clone_from(&ca_pem);
                    s.request.headers.clone_from(&spec.request.headers);
                    let mut ws = sock.spec();
                    // A token in the auth payload comes from the environment.
                    if let Some(a) = ws.socketio.as_mut().and_then(|s| s.auth.as_mut()) {
                        *a = expand_env(a)?;
                    }
                    s.transport = firsttoken_plan::Transport::WebSocket(ws);
                    Some(FlowSocket {
                        name: sock.name().to_string(),
                        spec: s,
                        sid_var: sock.sid.clone(),
                    })
                }
            });
            app.push(spec);
        }
        let mut direct = Vec::new();
        if let Some(d) = &cfg.direct {
            let key = match &d.api_key_env {
                Some(var) => Some(std::env::var(var).map_err(|_| {
                    SessionError::Invalid(format!(
                        "direct.api_key_env names {var}, which is not set in the environment"
                    ))
                })?),
                None => None,
            };
            let strategies: Vec<(String, serde_json::Value)> = if d.strategies.is_empty() {
                vec![("default".into(), serde_json::json!({}))]
            } else {
                d.strategies
                    .iter()
                    .map(|s| {
                        let extra = serde_json::to_value(&s.extra).map_err(|e| {
                            SessionError::Invalid(format!(
                                "direct.strategies {:?}: extra is not JSON: {e}",
                                s.name
                            ))
                        })?;
                        Ok((s.name.clone(), extra))
                    })
                    .collect::<Result<_, SessionError>>()?
            };
            for (_, extra) in strategies {
                let mut spec = base_spec(
                    &d.url,
                    StreamFormat::OpenAiChat,
                    timeout,
                    compressed,
                    true,
                    &cfg.session,
                )?;
                if let Some(k) = &key {
                    spec.request
                        .headers
                        .push(sensitive("authorization", &format!("Bearer {k}"))?);
                }
                direct.push((spec, extra));
            }
        }
        let ping = match &cfg.ping {
            Some(p) => {
                let mut spec = base_spec(
                    &p.url,
                    StreamFormat::Text,
                    timeout,
                    compressed,
                    false,
                    &cfg.session,
                )?;
                spec.tls.ca_pem.clone_from(&ca_pem);
                Some(spec)
            }
            None => None,
        };
        Ok(Source {
            app,
            direct,
            ping,
            direct_model: cfg.direct.as_ref().map(|d| d.model.clone()),
            prompts,
            path_prompts,
            tokens: Vec::new(),
            anonymous: cfg.app.paths.iter().map(|p| p.anonymous).collect(),
            flows,
            sockets,
            conversations,
            traces: None,
        })
    }

    /// Per app path, the length of its own prompt list (0: the session's).
    pub fn path_prompts(&self) -> Vec<usize> {
        self.path_prompts.iter().map(Vec::len).collect()
    }

    /// Per app path, the number of turns of each of its conversations
    /// (empty: no conversations file).
    pub fn path_conversations(&self) -> Vec<Vec<u32>> {
        self.conversations
            .iter()
            .map(|c| {
                c.iter()
                    .flat_map(|(all, _)| all)
                    .map(|t| u32::try_from(t.len()).unwrap_or(u32::MAX))
                    .collect()
            })
            .collect()
    }

    /// The conversation turn `planned` is: its text and how the history
    /// goes; `None` outside conversations.
    fn turn(&self, planned: &Planned) -> Option<(&str, Turn)> {
        let (Dest::App(i), Some(number)) = (planned.dest, planned.turn) else {
            return None;
        };
        let (all, history) = self.conversations.get(i)?.as_ref()?;
        let turns = all.get(planned.prompt % all.len().max(1))?;
        let text = turns.get(number.checked_sub(1)? as usize)?;
        Some((
            text,
            Turn {
                number,
                history: history.clone(),
            },
        ))
    }

    /// The list a planned request takes its prompt from.
    fn prompt_list(&self, dest: Dest) -> &[String] {
        match dest {
            Dest::App(i) => match self.path_prompts.get(i) {
                Some(own) if !own.is_empty() => own,
                _ => &self.prompts,
            },
            _ => &self.prompts,
        }
    }

    /// The prompt text of a planned request (`None` for a ping); a
    /// conversation's turn is its conversation's index and the turn's text.
    fn prompt_text(&self, planned: &Planned) -> (usize, &str) {
        if let Some((text, _)) = self.turn(planned) {
            return (planned.prompt, text);
        }
        let list = self.prompt_list(planned.dest);
        let i = planned.prompt % list.len().max(1);
        (i, list.get(i).map_or("", String::as_str))
    }

    /// The identity of a planned request's prompt; `None` for a ping,
    /// which carries none.
    pub fn prompt_of(&self, planned: &Planned) -> Option<PromptRef> {
        if planned.dest == Dest::Ping {
            return None;
        }
        let (i, text) = self.prompt_text(planned);
        Some(prompt_ref(i, text))
    }

    /// Register the trace id of every traced request in `registry` before
    /// it is sent.
    pub fn set_trace_registry(&mut self, registry: TraceRegistry) {
        self.traces = Some(registry);
    }

    /// Use these bearer tokens on app requests.
    pub fn set_tokens(&mut self, tokens: Vec<String>) {
        self.tokens = tokens;
    }

    /// How many prompts the session rotates over (list and file together).
    pub fn prompts(&self) -> usize {
        self.prompts.len()
    }

    /// The session's prompt `i` (list and file together, cycled).
    pub fn prompt(&self, i: usize) -> &str {
        self.prompts
            .get(i % self.prompts.len().max(1))
            .map_or("", String::as_str)
    }

    /// `text` with every secret the session sends masked as `***`: the
    /// app's and the provider's credentials and the test accounts' tokens,
    /// as written and in the encodings a server echoes them in.
    pub fn scrub(&self, text: &str) -> String {
        let specs = self
            .app
            .iter()
            .chain(self.direct.iter().map(|(s, _)| s))
            .chain(self.ping.iter());
        let mut out = specs.fold(text.to_string(), |t, s| s.request.scrub(&t));
        for token in self.tokens.iter().filter(|t| t.len() >= 4) {
            let escaped = serde_json::Value::String(token.clone()).to_string();
            out = out
                .replace(token.as_str(), "***")
                .replace(&escaped[1..escaped.len() - 1], "***");
        }
        out
    }

    /// The spec of app path 0 (for set-up calls against the app's base URL).
    pub fn app_spec(&self) -> &ProbeSpec {
        &self.app[0]
    }

    fn direct_body(&self, extra: &serde_json::Value, prompt: &str) -> Bytes {
        let mut body = serde_json::json!({
            "model": self.direct_model,
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": prompt}],
        });
        merge(&mut body, extra);
        Bytes::from(body.to_string())
    }
}

/// Deep-merge `extra` into `base` (objects merge, anything else replaces).
pub fn merge(base: &mut serde_json::Value, extra: &serde_json::Value) {
    match (base, extra) {
        (serde_json::Value::Object(b), serde_json::Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k.clone()).or_insert(serde_json::Value::Null), v);
            }
        }
        (b, e) => *b = e.clone(),
    }
}

impl Source {
    /// True when app path `i` is a flow (a conversation's turns are).
    fn is_flow(&self, i: usize) -> bool {
        self.flows.get(i).is_some_and(|f| !f.is_empty())
            || self.sockets.get(i).is_some_and(Option::is_some)
            || self.conversations.get(i).is_some_and(Option::is_some)
    }

    /// Add the test account's token, unless path `i` is anonymous.
    fn authorize(&self, i: usize, planned: &Planned, r: &mut RequestTemplate) {
        if !self.tokens.is_empty() && !self.anonymous.get(i).copied().unwrap_or(false) {
            let token = &self.tokens[planned.prompt % self.tokens.len()];
            if let Ok(h) = sensitive("authorization", &format!("Bearer {token}")) {
                r.headers.push(h);
            }
        }
    }
}

/// The path of an app URL without its `{name}` placeholders, for parsing
/// (a placeholder is not URL text until filled).
fn untemplated(path: &str) -> String {
    let mut out = path.to_string();
    for name in firsttoken_plan::flow::placeholders(path) {
        out = out.replace(&format!("{{{name}}}"), "x");
    }
    out
}

/// The app's base URL's path joined with `path`, placeholders kept (the
/// whole URL checked with them filled by a sample value).
fn joined(base: &str, path: &str) -> Result<String, SessionError> {
    Target::parse(&format!("{base}{}", untemplated(path)))?;
    let prefix = Target::parse(base)?.path_and_query;
    Ok(format!("{}{path}", prefix.trim_end_matches('/')))
}

impl RequestSource for Source {
    fn traced(&self, trace: &TraceContext) {
        if let Some(r) = &self.traces {
            r.insert_hex(&trace.trace_id);
        }
    }

    fn spec(&self, dest: Dest) -> &ProbeSpec {
        match dest {
            Dest::App(i) => &self.app[i.min(self.app.len() - 1)],
            Dest::Direct(i) => &self.direct[i.min(self.direct.len().saturating_sub(1))].0,
            // Config validation guarantees a [ping] section when pings are planned.
            Dest::Ping => self.ping.as_ref().unwrap_or(&self.app[0]),
        }
    }

    fn request(&self, planned: &Planned) -> RequestTemplate {
        let (_, prompt) = self.prompt_text(planned);
        match planned.dest {
            Dest::App(i) => {
                let mut r = self.spec(planned.dest).request.clone();
                // A flow's lane fills every variable, the prompt's included, in one pass.
                if !self.is_flow(i) {
                    let template = r
                        .body
                        .as_ref()
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                        .unwrap_or_default();
                    r.body = Some(Bytes::from(fill(&template, &[("prompt", prompt)])));
                }
                self.authorize(i, planned, &mut r);
                r
            }
            Dest::Direct(i) => {
                let (spec, extra) = &self.direct[i.min(self.direct.len().saturating_sub(1))];
                let mut r = spec.request.clone();
                r.body = Some(self.direct_body(extra, prompt));
                r
            }
            Dest::Ping => self.spec(Dest::Ping).request.clone(),
        }
    }

    fn flow(&self, planned: &Planned) -> Option<Flow> {
        let Dest::App(i) = planned.dest else {
            return None;
        };
        if !self.is_flow(i) {
            return None;
        }
        let (_, prompt) = self.prompt_text(planned);
        let steps = self.flows[i]
            .iter()
            .map(|s| {
                let mut s = s.clone();
                self.authorize(i, planned, &mut s.request);
                s
            })
            .collect();
        let socket = self.sockets[i].clone().map(|mut s| {
            self.authorize(i, planned, &mut s.spec.request);
            s
        });
        Some(Flow {
            steps,
            vars: vec![("prompt".into(), prompt.into())],
            socket,
            turn: self.turn(planned).map(|(_, t)| t),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_is_known_by_index_and_hash() {
        // printf 'hello' | sha256sum → 2cf24dba5fb0a30e26e83b2ac5b9e29e…
        let r = prompt_ref(3, "hello");
        assert_eq!(r.index, 3);
        assert_eq!(r.hash, "2cf24dba5fb0");
    }

    #[test]
    fn fill_escapes_and_merge_is_deep() {
        assert_eq!(
            fill(r#"{"m": "{prompt}"}"#, &[("prompt", "say \"hi\"\n")]),
            r#"{"m": "say \"hi\"\n"}"#
        );
        let mut a = serde_json::json!({"model": "m", "provider": {"order": ["a"]}});
        merge(&mut a, &serde_json::json!({"provider": {"ignore": ["b"]}}));
        assert_eq!(
            a,
            serde_json::json!({"model": "m", "provider": {"order": ["a"], "ignore": ["b"]}})
        );
    }

    /// `[session] compressed = true` reaches every destination's spec (issue 9, part 4).
    #[test]
    fn the_compressed_key_reaches_every_spec() {
        let base = firsttoken_plan::config::DEFAULT_CONFIG;
        let cfg = Config::parse(base, "f.toml").unwrap();
        assert!(!cfg.session.compressed);
        let src = Source::new(&cfg).unwrap();
        assert!(!src.app_spec().compressed);
        let text = base.replace("# compressed = true", "compressed = true");
        let cfg = Config::parse(&text, "f.toml").unwrap();
        assert!(cfg.session.compressed);
        let src = Source::new(&cfg).unwrap();
        assert!(src.app.iter().all(|s| s.compressed));
        assert!(src.direct.iter().all(|(s, _)| s.compressed));
        assert!(src.ping.iter().all(|s| s.compressed));
    }

    /// Trace context is on by default for every destination; `[session]
    /// trace_context = false` turns it off (issue 12, part 1).
    #[test]
    fn trace_context_is_on_unless_the_config_says_false() {
        let base = firsttoken_plan::config::DEFAULT_CONFIG;
        let cfg = Config::parse(base, "f.toml").unwrap();
        assert!(cfg.session.traced());
        let src = Source::new(&cfg).unwrap();
        assert!(src.app.iter().all(|s| s.trace_context));
        assert!(src.direct.iter().all(|(s, _)| s.trace_context));
        assert!(src.ping.iter().all(|s| s.trace_context));
        let text = base.replace("# trace_context = false", "trace_context = false");
        let cfg = Config::parse(&text, "f.toml").unwrap();
        assert!(!cfg.session.traced());
        let src = Source::new(&cfg).unwrap();
        assert!(src.app.iter().all(|s| !s.trace_context));
        assert!(src.direct.iter().all(|(s, _)| !s.trace_context));
    }

    /// `cacert` under `[session]` makes the app's paths and ping trust
    /// that CA, and only them: the direct upstream keeps the system roots.
    #[test]
    fn cacert_reaches_the_app_and_ping_specs() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, b"-----BEGIN CERTIFICATE-----\n").unwrap();
        let base = firsttoken_plan::config::DEFAULT_CONFIG;
        let src = Source::new(&Config::parse(base, "f.toml").unwrap()).unwrap();
        assert!(src.app.iter().all(|s| s.tls.ca_pem.is_none()));
        let text = base.replace(
            "# cacert = \"ca.pem\"",
            &format!("cacert = {:?}", ca.display().to_string()),
        );
        let cfg = Config::parse(&text, "f.toml").unwrap();
        let src = Source::new(&cfg).unwrap();
        let pem = Some(b"-----BEGIN CERTIFICATE-----\n".to_vec());
        assert!(!src.app.is_empty());
        assert!(src.app.iter().all(|s| s.tls.ca_pem == pem));
        assert!(src.ping.iter().all(|s| s.tls.ca_pem == pem));
        assert!(src.direct.iter().all(|(s, _)| s.tls.ca_pem.is_none()));
        // A missing file is an error that names it.
        let text = base.replace("# cacert = \"ca.pem\"", "cacert = \"/nonexistent/ca.pem\"");
        let err = Source::new(&Config::parse(&text, "f.toml").unwrap())
            .err()
            .expect("a missing CA file is an error");
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }

    /// `tls_resume`, `proxy` and `max_event_bytes` under `[session]` reach
    /// every destination's spec (issue 9, parts 1, 3 and 6).
    #[test]
    fn connection_keys_reach_every_spec() {
        let base = firsttoken_plan::config::DEFAULT_CONFIG;
        let src = Source::new(&Config::parse(base, "f.toml").unwrap()).unwrap();
        let specs = || {
            src.app
                .iter()
                .chain(src.direct.iter().map(|(s, _)| s))
                .chain(src.ping.iter())
                .collect::<Vec<_>>()
        };
        assert!(specs().iter().all(|s| !s.tls.resume));
        let text = base
            .replace("# tls_resume = true", "tls_resume = true")
            .replace("# max_event_bytes = 1048576", "max_event_bytes = 4096")
            .replace(
                "# proxy = \"http://user:password@proxy.internal:3128\"",
                "proxy = \"http://u:pw@127.0.0.1:3128\"",
            );
        let src = Source::new(&Config::parse(&text, "f.toml").unwrap()).unwrap();
        let specs: Vec<_> = src
            .app
            .iter()
            .chain(src.direct.iter().map(|(s, _)| s))
            .chain(src.ping.iter())
            .collect();
        assert!(specs.len() >= 3);
        for s in specs {
            assert!(s.tls.resume);
            assert_eq!(s.max_event_bytes, 4096);
            let p = s.proxy.as_ref().expect("the proxy");
            assert_eq!((p.host.as_str(), p.port), ("127.0.0.1", 3128));
        }
        // A path may name the header its route comes in.
        let text = base.replacen(
            "format = \"openai-chat\"",
            "format = \"openai-chat\"\nroute_header = \"X-Served-By\"",
            1,
        );
        let src = Source::new(&Config::parse(&text, "f.toml").unwrap()).unwrap();
        assert_eq!(src.app[0].route_header, "x-served-by");
        assert_eq!(src.app[1].route_header, "x-route");
        // An anonymous path's requests carry no account token; the others do.
        let text = base.replacen(
            "format = \"openai-chat\"",
            "format = \"openai-chat\"\nanonymous = true",
            1,
        );
        let mut src = Source::new(&Config::parse(&text, "f.toml").unwrap()).unwrap();
        src.set_tokens(vec!["tok-1".into()]);
        let has_auth = |i: usize| {
            let planned = Planned {
                phase: firsttoken_record::PhaseKind::Warm,
                dest: Dest::App(i),
                fresh: false,
                concurrency: None,
                prompt: 0,
                turn: None,
            };
            src.request(&planned)
                .headers
                .iter()
                .any(|(n, _)| n == http::header::AUTHORIZATION)
        };
        assert!(!has_auth(0), "the anonymous path sends no token");
        assert!(has_auth(1), "the other path does");
        // A bad value is refused by the config check, naming the key.
        let bad = base.replace("# max_event_bytes = 1048576", "max_event_bytes = 10");
        let e = Config::parse(&bad, "f.toml")
            .and_then(|c| c.validate("f.toml").map(|_| c))
            .unwrap_err()
            .to_string();
        assert!(e.contains("session.max_event_bytes"), "{e}");
    }
}
