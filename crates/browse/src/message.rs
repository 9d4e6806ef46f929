//! One tab, and one measured message at a time: type, send, follow the
//! network events of the request that carries the message, read the page's
//! paint stamps, put everything on the DevTools clock.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::network::{
    EnableParams, EventDataReceived, EventLoadingFailed, EventLoadingFinished,
    EventRequestWillBeSent, EventResponseReceived, Headers, ResourceTiming, ResourceType,
    SetCookiesParams, SetExtraHttpHeadersParams, StreamResourceContentParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EventConsoleApiCalled, EventExceptionThrown,
};
use firsttoken_drive::decode::Decoder;
use firsttoken_drive::trace::{TRACEPARENT, TraceContext};
use futures_util::StreamExt;
use serde::Deserialize;

use firsttoken_record::{ErrorKind, SampleError};

use crate::{BrowseError, BrowseSpec, ClockLink, Measured, SendAction, cdp};

/// The stamping script, installed before the page's own scripts.
const STAMPS_JS: &str = include_str!("stamps.js");

/// How often the page's stamps are read while waiting for the answer to
/// settle. Stamps are taken in the page, so this only bounds how late the
/// end is noticed, never a measured time.
const POLL: Duration = Duration::from_millis(25);

/// Longest wait for the input to appear after the page loaded.
const INPUT_WAIT: Duration = Duration::from_secs(10);

/// Console and exception texts are cut to this many characters.
const MAX_ERROR_CHARS: usize = 500;

/// A tab with the page loaded, ready to measure messages.
pub struct Page {
    page: chromiumoxide::Page,
}

/// A request seen after the user's action.
struct Req {
    url: String,
    /// `Network.requestWillBeSent`, seconds on the DevTools clock.
    start_s: f64,
    /// Its wall time, seconds since the epoch.
    wall_s: f64,
    status: Option<u16>,
    protocol: Option<String>,
    timing: Option<ResourceTiming>,
    decoder: Option<Decoder>,
    content_type: Option<String>,
    first_data_s: Option<f64>,
    content_s: Vec<f64>,
    end_s: Option<f64>,
    /// Content arrived before streaming was on, at an unknown time.
    content_unstamped: bool,
    /// It may carry the answer (`request_match`, or any request).
    answer: bool,
    /// It is the message's start (`send_match`).
    send: bool,
}

/// The page's stamps (`__firsttoken.read()`), on its own clock (ms).
#[derive(Debug, Deserialize)]
struct PageStamps {
    now: f64,
    time_origin: f64,
    input: Option<f64>,
    first_dom: Option<f64>,
    first_paint: Option<f64>,
    last_dom: Option<f64>,
    last_paint: Option<f64>,
    #[serde(default)]
    rt: Vec<ResourceEntry>,
}

#[derive(Debug, Deserialize)]
struct ResourceEntry {
    request_start: f64,
}

fn js_str(s: &str) -> String {
    // A JSON string is a JavaScript string literal.
    serde_json::Value::from(s).to_string()
}

fn bounded(s: &str) -> String {
    s.chars().take(MAX_ERROR_CHARS).collect()
}

impl Page {
    pub(crate) async fn prepare(
        page: chromiumoxide::Page,
        spec: &BrowseSpec,
    ) -> Result<Page, BrowseError> {
        page.execute(EnableParams::default())
            .await
            .map_err(cdp("Network.enable"))?;
        page.enable_runtime().await.map_err(cdp("Runtime.enable"))?;
        let mut init = String::from(STAMPS_JS);
        if !spec.local_storage.is_empty() {
            // Only on the page's own origin; about:blank has none.
            init.push_str("\ntry { if (location.protocol.startsWith('http')) {\n");
            for (k, v) in &spec.local_storage {
                init.push_str(&format!(
                    "localStorage.setItem({}, {});\n",
                    js_str(k),
                    js_str(&v.0)
                ));
            }
            init.push_str("} } catch (e) {}\n");
        }
        page.evaluate_on_new_document(init)
            .await
            .map_err(cdp("install the stamping script"))?;
        let open_err = |e: chromiumoxide::error::CdpError| BrowseError::Open {
            url: spec.url.clone(),
            message: e.to_string(),
        };
        if !spec.cookies.is_empty() {
            let cookies = spec.cookies.iter().map(|c| c.param(&spec.url)).collect();
            page.execute(SetCookiesParams::new(cookies))
                .await
                .map_err(cdp("set the cookies"))?;
        }
        page.goto(spec.url.as_str()).await.map_err(open_err)?;
        page.wait_for_navigation().await.map_err(open_err)?;
        Ok(Page { page })
    }

    async fn eval<T: serde::de::DeserializeOwned>(
        &self,
        context: &'static str,
        js: String,
    ) -> Result<T, BrowseError> {
        let r = self.page.evaluate(js).await.map_err(cdp(context))?;
        r.into_value::<T>().map_err(|e| BrowseError::Cdp {
            context,
            message: e.to_string(),
        })
    }

    /// Type `message` into the input, send it, and measure until the answer
    /// has settled (or `spec.timeout`).
    pub async fn measure(&self, message: &str, spec: &BrowseSpec) -> Result<Measured, BrowseError> {
        let trace = if spec.traceparent {
            TraceContext::random()
        } else {
            None
        };
        self.measure_traced(message, spec, trace).await
    }

    /// [`Page::measure`] with the trace context the caller chose (`None`:
    /// no `traceparent`), so a span receiver can expect its trace id
    /// before the message is sent.
    pub async fn measure_traced(
        &self,
        message: &str,
        spec: &BrowseSpec,
        trace: Option<TraceContext>,
    ) -> Result<Measured, BrowseError> {
        let p = &self.page;
        let mut will_send = p
            .event_listener::<EventRequestWillBeSent>()
            .await
            .map_err(cdp("listen"))?;
        let mut responses = p
            .event_listener::<EventResponseReceived>()
            .await
            .map_err(cdp("listen"))?;
        let mut data = p
            .event_listener::<EventDataReceived>()
            .await
            .map_err(cdp("listen"))?;
        let mut finished = p
            .event_listener::<EventLoadingFinished>()
            .await
            .map_err(cdp("listen"))?;
        let mut failed = p
            .event_listener::<EventLoadingFailed>()
            .await
            .map_err(cdp("listen"))?;
        let mut thrown = p
            .event_listener::<EventExceptionThrown>()
            .await
            .map_err(cdp("listen"))?;
        let mut console = p
            .event_listener::<EventConsoleApiCalled>()
            .await
            .map_err(cdp("listen"))?;
        let mut crashed = p
            .event_listener::<EventTargetCrashed>()
            .await
            .map_err(cdp("listen"))?;

        let armed: bool = self
            .eval(
                "arm",
                format!(
                    "window.__firsttoken ? __firsttoken.arm({}) : false",
                    js_str(&spec.answer)
                ),
            )
            .await?;
        if !armed {
            return Err(BrowseError::Open {
                url: spec.url.clone(),
                message: "the stamping script is not in the page (was it replaced by a redirect?)"
                    .into(),
            });
        }
        // A page that renders its own UI (a single-page app) shows the
        // input a while after it has loaded: wait for it, up to
        // INPUT_WAIT (or the message's timeout, when shorter).
        let input_wait = spec.timeout.min(INPUT_WAIT);
        let input_deadline = tokio::time::Instant::now() + input_wait;
        let focused = loop {
            let focused: bool = self
                .eval(
                    "focus the input",
                    format!(
                        "(() => {{ const el = document.querySelector({}); if (!el) return false; el.focus(); return true; }})()",
                        js_str(&spec.input)
                    ),
                )
                .await?;
            if focused || tokio::time::Instant::now() >= input_deadline {
                break focused;
            }
            tokio::time::sleep(POLL).await;
        };
        if !focused {
            return Ok(page_error(format!(
                "the input selector {:?} matched nothing within {} s",
                spec.input,
                input_wait.as_secs_f64()
            )));
        }
        p.execute(InsertTextParams::new(message))
            .await
            .map_err(cdp("type the message"))?;
        // This message's trace context, on every request the page sends
        // from here until the next message (Network.setExtraHTTPHeaders:
        // set before the action, so nothing is intercepted or paused on
        // the timed path, unlike a Fetch-domain rewrite of the request).
        if let Some(t) = &trace {
            p.execute(SetExtraHttpHeadersParams::new(Headers::new(
                serde_json::json!({ TRACEPARENT: t.traceparent() }),
            )))
            .await
            .map_err(cdp("set the traceparent"))?;
        }
        let _: bool = self
            .eval("arm the send", "__firsttoken.sending()".into())
            .await?;
        match &spec.send {
            SendAction::Enter => {
                for kind in [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp] {
                    let mut key = DispatchKeyEventParams::new(kind.clone());
                    key.key = Some("Enter".into());
                    key.code = Some("Enter".into());
                    key.windows_virtual_key_code = Some(13);
                    key.native_virtual_key_code = Some(13);
                    if kind == DispatchKeyEventType::KeyDown {
                        key.text = Some("\r".into());
                    }
                    p.execute(key).await.map_err(cdp("press Enter"))?;
                }
            }
            SendAction::Click(sel) => {
                let at: Option<(f64, f64)> = self
                    .eval(
                        "find the send button",
                        format!(
                            "(() => {{ const el = document.querySelector({}); if (!el) return null; const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()",
                            js_str(sel)
                        ),
                    )
                    .await?;
                let Some((x, y)) = at else {
                    return Ok(page_error(format!(
                        "the send selector {sel:?} matches nothing"
                    )));
                };
                for kind in [
                    DispatchMouseEventType::MousePressed,
                    DispatchMouseEventType::MouseReleased,
                ] {
                    let mut m = DispatchMouseEventParams::new(kind, x, y);
                    m.button = Some(MouseButton::Left);
                    m.click_count = Some(1);
                    p.execute(m).await.map_err(cdp("click send"))?;
                }
            }
        }

        let deadline = tokio::time::Instant::now() + spec.timeout;
        let mut reqs: HashMap<String, Req> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        let mut error: Option<String> = None;
        let mut poll = tokio::time::interval(POLL);
        let settle_ms = spec.settle.as_secs_f64() * 1000.0;
        let mut timed_out = false;
        let mut crash = false;
        let mut tick = false;
        let stamps: PageStamps = loop {
            // Biased, in causal order: every event of a request is in its
            // channel only after the ones before it on the wire, so taking
            // `requestWillBeSent` first never leaves a response or its data
            // for a request not yet known.
            tokio::select! {
                biased;
                Some(e) = will_send.next() => {
                    if let Some(r) = self.candidate(&e, spec) {
                        let id = e.request_id.inner().clone();
                        order.push(id.clone());
                        let answer = r.answer;
                        reqs.insert(id, r);
                        if !answer {
                            continue;
                        }
                        // The bytes of later data events; what arrived
                        // before this call has no time of its own.
                        if let Ok(res) = p.execute(StreamResourceContentParams::new(e.request_id.clone())).await {
                            let bytes = b64(res.result.buffered_data.as_ref());
                            if let Some(r) = reqs.get_mut(e.request_id.inner())
                                && !bytes.is_empty()
                                && r.feed(&bytes, spec)
                            {
                                r.content_unstamped = true;
                            }
                        }
                    }
                }
                Some(e) = responses.next() => {
                    if let Some(r) = reqs.get_mut(e.request_id.inner()) {
                        r.status = u16::try_from(e.response.status).ok();
                        r.timing = e.response.timing.clone();
                        r.protocol = e.response.protocol.clone();
                        r.content_type = header(&e.response.headers, "content-type");
                    }
                }
                Some(e) = data.next() => {
                    if let Some(r) = reqs.get_mut(e.request_id.inner()).filter(|r| r.answer) {
                        let t = *e.timestamp.inner();
                        r.first_data_s.get_or_insert(t);
                        if let Some(d) = &e.data {
                            let bytes = b64(d.as_ref());
                            if r.feed(&bytes, spec) {
                                r.content_s.push(t);
                            }
                        }
                    }
                }
                Some(e) = finished.next() => {
                    if let Some(r) = reqs.get_mut(e.request_id.inner()) {
                        r.end_s = Some(*e.timestamp.inner());
                    }
                }
                Some(e) = failed.next() => {
                    if let Some(r) = reqs.get_mut(e.request_id.inner()) {
                        r.end_s = Some(*e.timestamp.inner());
                        if error.is_none() && !e.canceled.unwrap_or(false) {
                            error = Some(bounded(&format!("request failed: {}", e.error_text)));
                        }
                    }
                }
                Some(e) = thrown.next() => {
                    if error.is_none() {
                        let d = &e.exception_details;
                        let text = d.exception.as_ref().and_then(|x| x.description.clone()).unwrap_or_else(|| d.text.clone());
                        error = Some(bounded(&text));
                    }
                }
                Some(e) = console.next() => {
                    if error.is_none() && e.r#type == ConsoleApiCalledType::Error {
                        let text: Vec<String> = e.args.iter().map(|a| match &a.value {
                            Some(serde_json::Value::String(s)) => s.clone(),
                            Some(v) => v.to_string(),
                            None => a.description.clone().unwrap_or_default(),
                        }).collect();
                        error = Some(bounded(&text.join(" ")));
                    }
                }
                Some(_) = crashed.next() => {
                    crash = true;
                    error = Some("the tab crashed".into());
                }
                _ = poll.tick() => { tick = true; }
            }
            if crash {
                return Ok(page_error("the tab crashed".into()));
            }
            // The page is read on the poll only: an evaluation per network
            // event would put work on the page's main thread while it renders.
            if !std::mem::take(&mut tick) {
                continue;
            }
            let chosen = choose(&reqs, &order);
            let url = chosen.map(|r| r.url.clone());
            let s: PageStamps = self
                .eval(
                    "read the stamps",
                    format!(
                        "__firsttoken.read({})",
                        url.as_deref().map(js_str).unwrap_or_else(|| "null".into())
                    ),
                )
                .await?;
            let ended = chosen.is_some_and(|r| r.end_s.is_some());
            // Settled: the stream ended, and the answer's last change (its
            // frame painted) is `settle` old.
            if let (true, Some(last), Some(_)) = (ended, s.last_dom, s.last_paint)
                && s.now - last >= settle_ms
            {
                break s;
            }
            // Ended without text: the page gets `settle` after the end to
            // show something (a page that renders at the end does it then).
            if ended && s.first_dom.is_none() && self.quiet_after_end(&s, chosen, settle_ms) {
                break s;
            }
            if tokio::time::Instant::now() >= deadline {
                timed_out = true;
                break s;
            }
        };

        let chosen = choose(&reqs, &order);
        let start = origin(&reqs, &order);
        let mut m = assemble(chosen, start, &stamps, error, timed_out);
        m.trace_id = trace.map(|t| t.trace_id);
        Ok(m)
    }

    /// True when the page's clock has passed the request's end by `settle`.
    fn quiet_after_end(&self, s: &PageStamps, r: Option<&Req>, settle_ms: f64) -> bool {
        let Some(r) = r else { return false };
        let Some(end) = r.end_s else { return false };
        // The end on the page's clock, through wall time (the resource
        // entry may not exist for a failed request).
        let end_page = end * 1000.0 + (r.wall_s - r.start_s) * 1000.0 - s.time_origin;
        s.now - end_page >= settle_ms
    }

    fn candidate(&self, e: &EventRequestWillBeSent, spec: &BrowseSpec) -> Option<Req> {
        let kind = e.r#type.clone();
        let streaming_kind = matches!(
            kind,
            // What a page's script sends; not `Other` (the favicon, a
            // prefetch), which may start before the action.
            Some(ResourceType::Fetch | ResourceType::Xhr | ResourceType::EventSource)
        );
        if !streaming_kind {
            return None;
        }
        let url = &e.request.url;
        let answer = spec
            .request_match
            .as_ref()
            .is_none_or(|m| url.contains(m.as_str()));
        let send = spec
            .send_match
            .as_ref()
            .is_some_and(|m| url.contains(m.as_str()));
        if !answer && !send {
            return None;
        }
        Some(Req {
            url: e.request.url.clone(),
            start_s: *e.timestamp.inner(),
            wall_s: *e.wall_time.inner(),
            status: None,
            protocol: None,
            timing: None,
            decoder: None,
            content_type: None,
            first_data_s: None,
            content_s: Vec::new(),
            end_s: None,
            content_unstamped: false,
            answer,
            send,
        })
    }
}

impl Req {
    /// Feed body bytes; true when they carried a content token.
    fn feed(&mut self, bytes: &[u8], spec: &BrowseSpec) -> bool {
        // An error response's body is no answer, whatever it holds.
        if self.status.is_some_and(|s| !(200..300).contains(&s)) {
            return false;
        }
        let ct = self.content_type.clone();
        let d = self
            .decoder
            .get_or_insert_with(|| Decoder::new(&spec.format, ct.as_deref(), false));
        d.feed(bytes).content
    }
}

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .unwrap_or_default()
}

fn header(
    h: &chromiumoxide::cdp::browser_protocol::network::Headers,
    name: &str,
) -> Option<String> {
    let v = serde_json::to_value(h).ok()?;
    v.as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| v.as_str().map(str::to_string))
}

/// The answer's request: the first (in order sent) that carried content,
/// else the first candidate.
fn choose<'a>(reqs: &'a HashMap<String, Req>, order: &[String]) -> Option<&'a Req> {
    let answers = || {
        order
            .iter()
            .filter_map(|id| reqs.get(id))
            .filter(|r| r.answer)
    };
    answers()
        .find(|r| !r.content_s.is_empty() || r.content_unstamped)
        .or_else(|| answers().next())
}

/// The message's start when it is not the answer's request: the first
/// request `send_match` picked.
fn origin<'a>(reqs: &'a HashMap<String, Req>, order: &[String]) -> Option<&'a Req> {
    order.iter().filter_map(|id| reqs.get(id)).find(|r| r.send)
}

fn page_error(message: String) -> Measured {
    Measured {
        error: Some(SampleError {
            kind: ErrorKind::PageError,
            message,
        }),
        ..empty()
    }
}

fn empty() -> Measured {
    Measured {
        error: None,
        request_url: None,
        send_url: None,
        status: None,
        http_version: None,
        dns_ms: None,
        connect_ms: None,
        tls_ms: None,
        input_lead_ms: None,
        sent_ms: None,
        headers_ms: None,
        first_data_ms: None,
        ttft_ms: None,
        last_token_ms: None,
        end_ms: None,
        first_dom_ms: None,
        painted_ttft_ms: None,
        painted_last_ms: None,
        content_chunks: 0,
        chunks_before_first_paint: None,
        trace_id: None,
        clock: ClockLink::None,
    }
}

/// Two links of one request further apart than this are of different
/// requests (the wall-time link is good to about a millisecond).
const LINK_AGREE_MS: f64 = 50.0;

/// The page's clock → DevTools ms. The resource entry's `requestStart` is
/// the DevTools `requestTime + sendStart` (one tick, read twice); of the
/// entries of the request's URL (a page may fetch one URL per message),
/// the one this link agrees best with the wall-time link is the request's.
/// Without one within [`LINK_AGREE_MS`], the wall-time link.
fn clock_offset(r: &Req, s: &PageStamps) -> (f64, ClockLink) {
    let wall = s.time_origin - (r.wall_s - r.start_s) * 1000.0;
    let best = r
        .timing
        .as_ref()
        .filter(|t| t.send_start >= 0.0)
        .and_then(|t| {
            s.rt.iter()
                .filter(|e| e.request_start > 0.0)
                .map(|e| t.request_time * 1000.0 + t.send_start - e.request_start)
                .min_by(|a, b| (a - wall).abs().total_cmp(&(b - wall).abs()))
        })
        .filter(|off| (off - wall).abs() <= LINK_AGREE_MS);
    match best {
        Some(off) => (off, ClockLink::ResourceTiming),
        None => (wall, ClockLink::WallTime),
    }
}

/// Everything on the DevTools clock, as ms from the message's start: the
/// `send` request's when there is one, else the answer's request's.
fn assemble(
    r: Option<&Req>,
    send: Option<&Req>,
    s: &PageStamps,
    error: Option<String>,
    timed_out: bool,
) -> Measured {
    let painted = s.first_paint.is_some();
    let fail = |kind, message: String| Some(SampleError { kind, message });
    // Text painted while the network carried no content token and the page
    // reported an error is the page's error message, not an answer.
    let network_content = r.is_some_and(|r| !r.content_s.is_empty() || r.content_unstamped);
    // A refused request is an error even when the page's console said
    // nothing (or said it after the end was seen).
    let error = error.or_else(|| {
        let st = r?.status.filter(|s| *s >= 400)?;
        (!network_content).then(|| format!("the message's request got HTTP {st}"))
    });
    let painted = painted && (network_content || error.is_none());
    let error = match (painted, timed_out, error) {
        (true, _, _) => None,
        (false, _, Some(message)) => fail(ErrorKind::PageError, message),
        (false, true, None) => fail(ErrorKind::Timeout, "no answer painted in time".into()),
        (false, false, None) => fail(
            ErrorKind::NoContent,
            "the exchange ended and the answer element showed no text".into(),
        ),
    };
    let Some(r) = r else {
        return Measured { error, ..empty() };
    };
    let start_ms = send.unwrap_or(r).start_s * 1000.0;
    let (offset, clock) = clock_offset(r, s);
    let page = |v: Option<f64>| v.map(|v| v + offset - start_ms);
    let net = |v: Option<f64>| v.map(|v| v * 1000.0 - start_ms);
    let timing_of = |r: &Req, f: fn(&ResourceTiming) -> f64| {
        r.timing
            .as_ref()
            .map(|t| t.request_time * 1000.0 + f(t) - start_ms)
            .filter(|_| r.timing.as_ref().is_some_and(|t| f(t) >= 0.0))
    };
    let timing = |f: fn(&ResourceTiming) -> f64| timing_of(r, f);
    let first_dom = page(s.first_dom);
    let chunks_before = first_dom.map(|fd| {
        r.content_s
            .iter()
            .filter(|&&t| t * 1000.0 - start_ms <= fd)
            .count() as u64
    });
    Measured {
        error,
        request_url: Some(r.url.clone()),
        send_url: send.map(|s| s.url.clone()),
        status: r.status,
        http_version: r.protocol.clone(),
        dns_ms: timing(|t| t.dns_end),
        connect_ms: timing(|t| t.connect_end),
        tls_ms: timing(|t| t.ssl_end),
        input_lead_ms: page(s.input).map(|i| -i),
        // The message fully sent: the start request's, when it is not the
        // answer's.
        sent_ms: timing_of(send.unwrap_or(r), |t| t.send_end),
        headers_ms: timing(|t| t.receive_headers_end),
        first_data_ms: net(r.first_data_s),
        ttft_ms: if r.content_unstamped {
            None
        } else {
            net(r.content_s.first().copied())
        },
        last_token_ms: net(r.content_s.last().copied()),
        end_ms: net(r.end_s),
        first_dom_ms: first_dom,
        painted_ttft_ms: page(s.first_paint),
        painted_last_ms: page(s.last_paint),
        content_chunks: r.content_s.len() as u64,
        chunks_before_first_paint: chunks_before,
        clock: if s.first_dom.is_some() || s.input.is_some() {
            clock
        } else {
            ClockLink::None
        },
        trace_id: None,
    }
}
