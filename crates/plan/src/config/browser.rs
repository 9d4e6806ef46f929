//! `[app.browser]` and `[phases.browser]`: the app's own chat page measured
//! in a real headless Chromium as part of a session (the messages are
//! stored as path `browser`, beside the HTTP paths), and their checks.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The path name browser-measured messages are stored under.
pub const BROWSER_PATH: &str = "browser";

/// Most browser contexts at once (each is a renderer process).
pub const MAX_BROWSER_CONTEXTS: u32 = 64;

/// `[app.browser]`: the chat page a user types into, and how.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserSection {
    /// The chat page: a path on `app.base_url` (`/chat`) or a full
    /// `http(s)://` URL.
    pub page: String,
    /// CSS selector of the message input.
    pub input: String,
    /// CSS selector of the answer element (the last match after sending is
    /// the answer).
    pub answer: String,
    /// How to send: `enter` (default), or the CSS selector of a send
    /// button to click.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<String>,
    /// Only a request whose URL contains this carries the answer (default:
    /// the first request after the action whose body has a content token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_match: Option<String>,
    /// When the page sends the message on one request and reads the answer
    /// from another (Gradio: `queue/join`, then `queue/data`): the first
    /// request after the action whose URL contains this is where the
    /// message's times start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_match: Option<String>,
    /// When the answer comes over the page's WebSocket (picked by
    /// `request_match`) as Socket.IO events: the event's name
    /// (`42["name", payload]`), each payload read with `format` (e.g.
    /// `sse-json:/data/content`). Unset: each text frame of such a socket
    /// is one event of the format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_event: Option<String>,
    /// With `socket_event`: the JSON pointer whose `true` in a payload
    /// ends the answer (e.g. `/data/done`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_done: Option<String>,
    /// How the answer's body is read for content tokens (as
    /// `app.paths.format`; default `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// `localStorage` entries set on the page's origin before its scripts
    /// run, in every browser context: how a page finds its sign-in. In a
    /// value, `{token}` is the session's account's bearer token (`[app.auth]`:
    /// each context signs in as one account, round-robin) and `$NAME` the
    /// whole value from an environment variable. Values are never stored.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub local_storage: BTreeMap<String, String>,
    /// Cookies set on the page's host before it loads, in every context,
    /// with the same `{token}` and `$NAME` values; never stored.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cookies: BTreeMap<String, String>,
    /// A storage-state file (Playwright's `storageState` JSON: `cookies`,
    /// and `origins` with each origin's `localStorage`) loaded into every
    /// context before the page loads: a sign-in saved once by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_state: Option<String>,
    /// Further host names Chromium may resolve (a CDN the page loads
    /// from); the page's own host and loopback always resolve, nothing
    /// else does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// Longest wait for one message, from the action to its last paint
    /// (default 60 s).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub timeout: Option<Duration>,
    /// How long the answer must stay unchanged after the stream ended to
    /// count as done (default 300 ms).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub settle: Option<Duration>,
    /// The Chromium executable (default: `FIRSTTOKEN_CHROMIUM`, else
    /// `chromium` on `PATH`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chromium: Option<String>,
}

/// `[phases.browser]`: the messages measured through the page, after the
/// session's HTTP phases, each a prompt of `[prompts]` in turn.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserPhases {
    /// Returning visits: messages sent one after another on one page (one
    /// conversation, warm connections), stored in phase `warm`.
    #[serde(default)]
    pub warm: u32,
    /// First visits: a new browser context (no cookies, no cache, new
    /// connections) and a page load for each message, phase `fresh`.
    #[serde(default)]
    pub fresh: u32,
    /// Users at once: for each level N, N contexts in one browser send
    /// their messages at the same moment, round after round, phase
    /// `concurrency` at level N.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<u32>,
    /// Messages per level (default: the level itself, one round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_level: Option<u32>,
    /// Cold probes: after `idle_gap` with nothing sent, a first visit,
    /// phase `cold` (the first message after the app sat idle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<BrowserCold>,
}

/// `phases.browser.cold`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserCold {
    /// Probes.
    pub count: u32,
    /// Idle time before each.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub idle_gap: Duration,
}

impl BrowserPhases {
    /// Messages per level.
    pub fn per_level(&self, level: u32) -> u32 {
        self.per_level.unwrap_or(level)
    }

    /// Every message planned, over all browser phases.
    pub fn planned(&self) -> u64 {
        u64::from(self.warm)
            + u64::from(self.fresh)
            + self
                .levels
                .iter()
                .map(|&k| u64::from(self.per_level(k)))
                .sum::<u64>()
            + self.cold.as_ref().map_or(0, |c| u64::from(c.count))
    }
}

/// Check `[app.browser]` against `[phases.browser]`; `Err((key, message))`.
pub(crate) fn check(
    browser: Option<&BrowserSection>,
    phases: Option<&BrowserPhases>,
    paths: &[super::PathSection],
) -> Result<(), (String, String)> {
    let err = |k: &str, m: String| Err((k.to_string(), m));
    if paths.iter().any(|p| p.name == BROWSER_PATH) && browser.is_some() {
        return err(
            "app.paths",
            format!("{BROWSER_PATH:?} is the browser's path name: name the HTTP path otherwise"),
        );
    }
    let Some(b) = browser else {
        return match phases {
            Some(p) if p.planned() > 0 => err(
                "phases.browser",
                "browser messages need an [app.browser] section (the page and its selectors)"
                    .into(),
            ),
            _ => Ok(()),
        };
    };
    let is_url = b.page.starts_with("http://") || b.page.starts_with("https://");
    if !is_url && !b.page.starts_with('/') {
        return err(
            "app.browser.page",
            format!("{:?}: a path starting with / or an http(s):// URL", b.page),
        );
    }
    for (k, v) in [("input", &b.input), ("answer", &b.answer)] {
        if v.trim().is_empty() {
            return err(
                &format!("app.browser.{k}"),
                "a CSS selector is needed".into(),
            );
        }
    }
    if b.socket_done.is_some() && b.socket_event.is_none() {
        return err(
            "app.browser.socket_done",
            "needs socket_event (the Socket.IO event whose payloads it reads)".into(),
        );
    }
    if let Some(p) = &b.socket_done
        && !p.starts_with('/')
    {
        return err(
            "app.browser.socket_done",
            format!("{p:?} is not a JSON pointer (e.g. \"/data/done\")"),
        );
    }
    if let Some(f) = &b.format
        && let Err(e) = f.parse::<crate::StreamFormat>()
    {
        return err("app.browser.format", e.to_string());
    }
    if b.timeout
        .is_some_and(|t| t.is_zero() || t > super::MAX_SPAN)
    {
        return err("app.browser.timeout", "above 0 and at most a day".into());
    }
    if let Some(p) = phases {
        for (i, &k) in p.levels.iter().enumerate() {
            if !(1..=MAX_BROWSER_CONTEXTS).contains(&k) {
                return err(
                    &format!("phases.browser.levels[{i}]"),
                    format!("{k}: from 1 to {MAX_BROWSER_CONTEXTS} contexts"),
                );
            }
        }
        if p.per_level == Some(0) {
            return err("phases.browser.per_level", "at least 1".into());
        }
        if let Some(c) = &p.cold
            && c.idle_gap > super::MAX_SPAN
        {
            return err("phases.browser.cold.idle_gap", "at most a day".into());
        }
        if p.planned() > u64::from(super::MAX_PHASE_REQUESTS) {
            return err(
                "phases.browser",
                format!(
                    "more messages than one phase may plan ({})",
                    super::MAX_PHASE_REQUESTS
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Config;

    const BASE: &str = r##"
[app]
base_url = "http://127.0.0.1:8090"
[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{"message": "{prompt}"}'
[prompts]
list = ["hi"]
"##;

    fn parse(extra: &str) -> Result<Config, String> {
        Config::parse(&format!("{BASE}{extra}"), "t.toml").map_err(|e| e.to_string())
    }

    #[test]
    fn browser_phases_parse_with_their_page() {
        let c = parse(
            r##"
[app.browser]
page = "/chat"
input = "#message"
answer = ".assistant"
local_storage = { refapp_token = "{token}" }
timeout = "20s"
[phases]
warm = 0
[phases.browser]
warm = 3
levels = [2, 4]
cold = { count = 1, idle_gap = "1s" }
"##,
        )
        .unwrap();
        let p = c.phases.browser.unwrap();
        // 3 warm, one round of 2 and one of 4, one cold probe.
        assert_eq!(p.planned(), 3 + 2 + 4 + 1);
        assert_eq!(
            c.app.browser.unwrap().local_storage["refapp_token"],
            "{token}"
        );
    }

    #[test]
    fn each_browser_mistake_names_its_key() {
        for (extra, key) in [
            ("[phases.browser]\nwarm = 2\n", "phases.browser"),
            (
                "[app.browser]\npage = \"chat\"\ninput = \"#m\"\nanswer = \".a\"\n",
                "app.browser.page",
            ),
            (
                "[app.browser]\npage = \"/chat\"\ninput = \" \"\nanswer = \".a\"\n",
                "app.browser.input",
            ),
            (
                "[app.browser]\npage = \"/chat\"\ninput = \"#m\"\nanswer = \".a\"\nformat = \"morse\"\n",
                "app.browser.format",
            ),
            (
                "[app.browser]\npage = \"/chat\"\ninput = \"#m\"\nanswer = \".a\"\n[phases.browser]\nlevels = [0]\n",
                "phases.browser.levels[0]",
            ),
            (
                "[app.browser]\npage = \"/chat\"\ninput = \"#m\"\nanswer = \".a\"\nsocket_done = \"/data/done\"\n",
                "app.browser.socket_done",
            ),
        ] {
            let e = parse(extra).unwrap_err();
            assert!(e.contains(key), "{extra}: {e}");
        }
    }
}
