//! Checking a parsed config: ranges, consistency and templates, each
//! error naming its key.

use super::*;

impl Config {
    /// Check ranges and consistency; `path` names the source in errors (a
    /// file, or e.g. `demo` for a config built in memory). [`Config::parse`]
    /// calls it; a config built in code must call it before use.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.into(),
            key: key.into(),
            message,
        };
        let plan = |source: PlanError| ConfigError::Plan {
            path: path.into(),
            source,
        };
        crate::Target::parse(&self.app.base_url).map_err(plan)?;
        if let Some(p) = &self.session.proxy {
            crate::proxy::choose(
                &crate::Target::parse(&self.app.base_url).map_err(plan)?,
                Some(p),
                |_| None,
            )
            .map_err(plan)?;
        }
        if let Some(n) = self.session.max_event_bytes
            && n < crate::MIN_MAX_EVENT_BYTES
        {
            return Err(invalid(
                "session.max_event_bytes",
                format!(
                    "{n} is below the smallest allowed, {}",
                    crate::MIN_MAX_EVENT_BYTES
                ),
            ));
        }
        if self.app.paths.is_empty() {
            return Err(invalid(
                "app.paths",
                "at least one [[app.paths]] entry is needed".into(),
            ));
        }
        for (i, p) in self.app.paths.iter().enumerate() {
            if !p.path.starts_with('/') {
                return Err(invalid(
                    &format!("app.paths[{i}].path"),
                    format!("{:?} must start with /", p.path),
                ));
            }
            if let Err(e) = p.format.parse::<crate::StreamFormat>() {
                return Err(invalid(&format!("app.paths[{i}].format"), e.to_string()));
            }
            if let Some(h) = &p.route_header
                && http::HeaderName::from_bytes(h.as_bytes()).is_err()
            {
                return Err(invalid(
                    &format!("app.paths[{i}].route_header"),
                    format!("{h:?} is not a valid header name"),
                ));
            }
            if let Some(f) = &p.route_field
                && !f.starts_with('/')
            {
                return Err(invalid(
                    &format!("app.paths[{i}].route_field"),
                    format!("{f:?} is not a JSON pointer (e.g. \"/route\")"),
                ));
            }
            if let Some(m) = json_template_error(&p.body) {
                return Err(invalid(&format!("app.paths[{i}].body"), m));
            }
            if p.prompts.as_ref().is_some_and(Vec::is_empty) && p.prompts_file.is_none() {
                return Err(invalid(
                    &format!("app.paths[{i}].prompts"),
                    "an empty list: give prompts, or leave it out for the session's".into(),
                ));
            }
            if let Some(w) = &p.websocket
                && let Err(e) = w.spec().validate()
            {
                return Err(invalid(&format!("app.paths[{i}].websocket"), e.to_string()));
            }
            super::flow::check(i, p).map_err(|(key, m)| invalid(&key, m))?;
            super::conversation::check_path(i, p).map_err(|(key, m)| invalid(&key, m))?;
            if p.expect_route.as_deref().is_some_and(str::is_empty) {
                return Err(invalid(
                    &format!("app.paths[{i}].expect_route"),
                    "must name a route".into(),
                ));
            }
        }
        for name in self.app.timing_headers.iter().flat_map(|m| m.keys()) {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(invalid(
                    "app.timing_headers",
                    format!("{name:?} is not a valid header name"),
                ));
            }
        }
        if let Some(d) = &self.direct {
            crate::Target::parse(&d.url).map_err(plan)?;
        }
        if let Some(p) = &self.ping {
            crate::Target::parse(&p.url).map_err(plan)?;
        }
        // Target::parse refuses credentials in the URL too.
        if let Some(e) = &self.engine {
            crate::Target::parse(&e.metrics_url)
                .map_err(|err| invalid("engine.metrics_url", err.to_string()))?;
        }
        if let Some(a) = &self.app.auth {
            let mode = a.mode().map_err(|(key, m)| invalid(key, m))?;
            if let (AuthMode::SignIn { .. }, Some(_)) = (mode, &self.app.cleanup) {
                return Err(invalid(
                    "app.cleanup",
                    "accounts signed in to (app.auth.signin_path) exist before the session and are never deleted; [app.cleanup] deletes only accounts the session signs up, so remove it".into(),
                ));
            }
            for (key, p) in [
                ("app.auth.token_pointer", Some(&a.token_pointer)),
                ("app.auth.id_pointer", a.id_pointer.as_ref()),
            ] {
                let Some(p) = p else { continue };
                if !p.is_empty() && !p.starts_with('/') {
                    return Err(invalid(
                        key,
                        format!("{p:?} is not a JSON pointer: it starts with '/' (e.g. \"/{p}\")"),
                    ));
                }
            }
            if let Some(m) = json_template_error(&a.body) {
                return Err(invalid("app.auth.body", m));
            }
            for (key, p) in [
                ("app.auth.signup_path", &a.signup_path),
                ("app.auth.signin_path", &a.signin_path),
            ] {
                if let Some(p) = p
                    && !p.starts_with('/')
                {
                    return Err(invalid(key, format!("{p:?} must start with /")));
                }
            }
        }
        if let Some(c) = &self.app.cleanup {
            if http::Method::from_bytes(c.http_method().as_bytes()).is_err() {
                return Err(invalid(
                    "app.cleanup.http_method",
                    format!("{:?} is not an HTTP method", c.http_method()),
                ));
            }
            if let Some(p) = &c.http_delete
                && !p.starts_with('/')
            {
                return Err(invalid(
                    "app.cleanup.http_delete",
                    format!(
                        "{p:?} must start with / (a path on the app, {{id}} for the account's id)"
                    ),
                ));
            }
            if c.http_delete.is_none() && (c.http_method.is_some() || c.admin_token_env.is_some()) {
                return Err(invalid(
                    "app.cleanup",
                    "http_method and admin_token_env apply to http_delete, which is not set".into(),
                ));
            }
        }
        if self.phases.direct > 0 && self.direct.is_none() {
            return Err(invalid(
                "phases.direct",
                "direct requests need a [direct] section".into(),
            ));
        }
        if self.phases.ping > 0 && self.ping.is_none() {
            return Err(invalid("phases.ping", "pings need a [ping] section".into()));
        }
        let names: Vec<&str> = self.app.paths.iter().map(|p| p.name.as_str()).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(invalid(
                    &format!("app.paths[{i}].name"),
                    format!("{n:?} names two paths"),
                ));
            }
        }
        let ph = &self.phases;
        for (key, paths) in [
            ("phases.warm.paths", &ph.warm.paths),
            ("phases.fresh.paths", &ph.fresh.paths),
            (
                "phases.cold.paths",
                &ph.cold.as_ref().and_then(|c| c.paths.clone()),
            ),
            (
                "phases.concurrency.paths",
                &ph.concurrency.as_ref().and_then(|c| c.paths.clone()),
            ),
            (
                "phases.rate.paths",
                &ph.rate.as_ref().and_then(|r| r.paths.clone()),
            ),
            (
                "phases.conversations.paths",
                &ph.conversations.as_ref().and_then(|c| c.paths.clone()),
            ),
        ] {
            let Some(paths) = paths else { continue };
            if paths.is_empty() {
                return Err(invalid(
                    key,
                    "name at least one app path, or leave it out for all".into(),
                ));
            }
            for (i, p) in paths.iter().enumerate() {
                if !names.contains(&p.as_str()) {
                    return Err(invalid(
                        key,
                        format!("{p:?} is not an app path (paths: {})", names.join(", ")),
                    ));
                }
                if paths[..i].contains(p) {
                    return Err(invalid(key, format!("{p:?} is named twice")));
                }
            }
        }
        let ph = &self.phases;
        for (key, n) in [
            ("phases.ping", ph.ping),
            ("phases.cold.count", ph.cold.as_ref().map_or(0, |c| c.count)),
            ("phases.warm", ph.warm.count),
            ("phases.fresh", ph.fresh.count),
            ("phases.direct", ph.direct),
            (
                "phases.concurrency.requests",
                ph.concurrency.as_ref().map_or(0, |c| c.requests),
            ),
            (
                "phases.rate.requests",
                ph.rate.as_ref().map_or(0, |r| r.requests),
            ),
            (
                "phases.conversations.count",
                ph.conversations.as_ref().map_or(0, |c| c.count),
            ),
        ] {
            if n > MAX_PHASE_REQUESTS {
                return Err(invalid(
                    key,
                    format!("{n} requests is more than one phase may plan ({MAX_PHASE_REQUESTS})"),
                ));
            }
        }
        super::conversation::check_phase(&self.phases, &self.app.paths)
            .map_err(|(key, m)| invalid(&key, m))?;
        super::browser::check(
            self.app.browser.as_ref(),
            self.phases.browser.as_ref(),
            &self.app.paths,
        )
        .map_err(|(key, m)| invalid(&key, m))?;
        if let Some(c) = &self.phases.concurrency
            && let Some(&k) = c.levels.iter().find(|&&k| k > MAX_CONCURRENCY)
        {
            return Err(invalid(
                "phases.concurrency.levels",
                format!(
                    "level {k} is above the most requests in flight allowed ({MAX_CONCURRENCY})"
                ),
            ));
        }
        if let Some(c) = &self.phases.concurrency
            && (c.levels.is_empty() || c.levels.contains(&0))
        {
            return Err(invalid(
                "phases.concurrency.levels",
                "levels must be a non-empty list of numbers ≥ 1".into(),
            ));
        }
        if let Some(r) = &self.phases.rate {
            if !(r.per_second.is_finite()
                && (MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&r.per_second))
            {
                return Err(invalid(
                    "phases.rate.per_second",
                    format!(
                        "must be between {MIN_RATE_PER_S} and {MAX_RATE_PER_S} requests per second, got {}",
                        r.per_second
                    ),
                ));
            }
            // The last arrival of a constant rate; a Poisson schedule is
            // capped at the same span when it is expanded.
            let span = f64::from(r.requests) / r.per_second;
            if span > MAX_SPAN.as_secs_f64() {
                return Err(invalid(
                    "phases.rate",
                    format!(
                        "{} requests at {} per second take {span:.0} s; at most {} s are allowed",
                        r.requests,
                        r.per_second,
                        MAX_SPAN.as_secs()
                    ),
                ));
            }
        }
        if let Some(t) = self.session.timeout
            && (t.is_zero() || t > MAX_SPAN)
        {
            return Err(invalid(
                "session.timeout",
                format!(
                    "must be more than 0 and at most {} s, got {t:?}",
                    MAX_SPAN.as_secs()
                ),
            ));
        }
        if let Some(c) = &self.phases.cold
            && c.idle_gap > MAX_SPAN
        {
            return Err(invalid(
                "phases.cold.idle_gap",
                format!(
                    "must be at most {} s, got {:?}",
                    MAX_SPAN.as_secs(),
                    c.idle_gap
                ),
            ));
        }
        if let Some(b) = self.session.budget_usd
            && !(b.is_finite() && b > 0.0)
        {
            return Err(invalid(
                "session.budget_usd",
                "must be a positive number".into(),
            ));
        }
        self.validate_traces(&invalid)?;
        if self.prompts.list.is_empty() && self.prompts.file.is_none() {
            return Err(invalid(
                "prompts",
                "give prompts.list or prompts.file".into(),
            ));
        }
        Ok(())
    }
}

impl Config {
    /// `[traces]`: a socket address, a bounded grace, a cap within the
    /// store's, and trace context on (without it no span is the session's).
    fn validate_traces(
        &self,
        invalid: &dyn Fn(&str, String) -> ConfigError,
    ) -> Result<(), ConfigError> {
        let t = &self.traces;
        if let Some(l) = &t.listen {
            if l.parse::<std::net::SocketAddr>().is_err() {
                return Err(invalid(
                    "traces.listen",
                    format!("{l:?} is not an address to listen on, e.g. \"127.0.0.1:4318\""),
                ));
            }
            if !self.session.traced() {
                return Err(invalid(
                    "traces.listen",
                    "collecting spans needs session.trace_context: without a traceparent no span can be joined to its request".into(),
                ));
            }
        }
        if t.grace() > MAX_TRACES_GRACE {
            return Err(invalid(
                "traces.grace",
                format!(
                    "must be at most {} s, got {:?}",
                    MAX_TRACES_GRACE.as_secs(),
                    t.grace()
                ),
            ));
        }
        let cap = firsttoken_record::span::MAX_SPANS_PER_SESSION;
        if let Some(n) = t.max_spans
            && !(1..=cap).contains(&n)
        {
            return Err(invalid(
                "traces.max_spans",
                format!("must be from 1 to {cap}, got {n}"),
            ));
        }
        Ok(())
    }
}

/// Why a template that looks like JSON (it opens with `{` or `[`) is not
/// JSON once its placeholders are filled with sample values (a prompt with
/// a quote and a newline, an e-mail, a password), or `None`.
pub(super) fn json_template_error(template: &str) -> Option<String> {
    let t = template.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    // Filled as the session fills it: the value JSON-escaped in place.
    let esc = |v: &str| {
        let q = serde_json::to_string(v).unwrap_or_default();
        q[1..q.len() - 1].to_string()
    };
    let filled = template
        .replace("{prompt}", &esc("a sample \"prompt\"\nwith a new line"))
        .replace("{email}", &esc("bench-0@bench.invalid"))
        .replace("{password}", &esc("p@ss\"word"));
    // A flow's captured values, as a sample value that fits in quotes
    // and, for a numeric id, outside them.
    let mut filled = filled;
    for name in crate::flow::placeholders(&filled.clone()) {
        filled = filled.replace(&format!("{{{name}}}"), "1");
    }
    serde_json::from_str::<serde_json::Value>(&filled)
        .err()
        .map(|e| {
            format!(
                "not valid JSON once filled with a sample prompt, e-mail and password ({e}); \
             a placeholder goes inside quotes, e.g. \"content\": \"{{prompt}}\""
            )
        })
}
