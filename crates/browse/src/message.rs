//! One tab, and one measured message at a time: type, send, follow the
//! network events of the request that carries the message, read the page's
//! paint stamps, put everything on the DevTools clock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::inspector::EventTargetCrashed;
use chromiumoxide::cdp::browser_protocol::network::{
    EnableParams, EventDataReceived, EventLoadingFailed, EventLoadingFinished,
    EventRequestWillBeSent, EventResponseReceived, EventWebSocketClosed, EventWebSocketCreated,
    EventWebSocketFrameReceived, EventWebSocketFrameSent, EventWebSocketWillSendHandshakeRequest,
    Headers, SetCookiesParams, SetExtraHttpHeadersParams, StreamResourceContentParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EventConsoleApiCalled, EventExceptionThrown,
};
use firsttoken_drive::trace::{TRACEPARENT, TraceContext};
use futures_util::StreamExt;

use crate::exchange::{
    PageStamps, Req, assemble, b64, candidate, choose, header, linker, origin, page_error,
    quiet_after_end,
};
use crate::{BrowseError, BrowseSpec, Measured, SendAction, cdp};

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
    /// The page's WebSockets by request id, as they were opened (at load,
    /// most often: before any message).
    sockets: Sockets,
    watch: tokio::task::JoinHandle<()>,
}

/// A WebSocket the page opened: its URL, and its wall time minus its
/// DevTools time (from its handshake), to link the page's clock.
#[derive(Clone)]
struct SocketInfo {
    url: String,
    link: Option<f64>,
}

type Sockets = Arc<Mutex<HashMap<String, SocketInfo>>>;

impl Drop for Page {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

/// Keep `sockets` up to date with the page's WebSockets until aborted.
async fn watch_sockets(
    page: &chromiumoxide::Page,
    sockets: Sockets,
) -> Result<tokio::task::JoinHandle<()>, BrowseError> {
    let mut created = page
        .event_listener::<EventWebSocketCreated>()
        .await
        .map_err(cdp("listen"))?;
    let mut handshake = page
        .event_listener::<EventWebSocketWillSendHandshakeRequest>()
        .await
        .map_err(cdp("listen"))?;
    Ok(tokio::spawn(async move {
        loop {
            tokio::select! {
                Some(e) = created.next() => {
                    if let Ok(mut m) = sockets.lock() {
                        m.insert(e.request_id.inner().clone(), SocketInfo { url: e.url.clone(), link: None });
                    }
                }
                Some(e) = handshake.next() => {
                    if let Ok(mut m) = sockets.lock()
                        && let Some(i) = m.get_mut(e.request_id.inner())
                    {
                        i.link = Some(*e.wall_time.inner() - *e.timestamp.inner());
                    }
                }
                else => break,
            }
        }
    }))
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
        let sockets: Sockets = Arc::default();
        let watch = watch_sockets(&page, sockets.clone()).await?;
        page.goto(spec.url.as_str()).await.map_err(open_err)?;
        page.wait_for_navigation().await.map_err(open_err)?;
        Ok(Page {
            page,
            sockets,
            watch,
        })
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
        self.measure_traced(message, spec, Self::trace(spec)).await
    }

    fn trace(spec: &BrowseSpec) -> Option<TraceContext> {
        if spec.traceparent {
            TraceContext::random()
        } else {
            None
        }
    }

    /// The exchange's entry for the page's WebSocket `id`, made at its
    /// first frame after the action (`t`, s); `None` for a socket the
    /// page opened without it being seen, or one no match names.
    fn socket_req<'r>(
        &self,
        reqs: &'r mut HashMap<String, Req>,
        order: &mut Vec<String>,
        id: &str,
        t: f64,
        spec: &BrowseSpec,
    ) -> Option<&'r mut Req> {
        if !reqs.contains_key(id) {
            let info = self.sockets.lock().ok()?.get(id).cloned()?;
            let r = Req::socket(&info.url, t, info.link, spec);
            if !r.answer && !r.send {
                return None;
            }
            order.push(id.to_string());
            reqs.insert(id.to_string(), r);
        }
        reqs.get_mut(id)
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
        // A socket's frames count from here: the page may have been busy
        // on its socket until now (connecting, say, before it showed its
        // input), and none of that is this message.
        let mut frames_in = p
            .event_listener::<EventWebSocketFrameReceived>()
            .await
            .map_err(cdp("listen"))?;
        let mut frames_out = p
            .event_listener::<EventWebSocketFrameSent>()
            .await
            .map_err(cdp("listen"))?;
        let mut closed = p
            .event_listener::<EventWebSocketClosed>()
            .await
            .map_err(cdp("listen"))?;
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
                    if let Some(r) = candidate(&e, spec) {
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
                Some(e) = frames_out.next() => {
                    // The user's message leaving on the socket (not the
                    // Engine.IO heartbeat a page answers on its own).
                    let t = *e.timestamp.inner();
                    let heartbeat = matches!(e.response.payload_data.as_str(), "2" | "3");
                    if !heartbeat {
                        self.socket_req(&mut reqs, &mut order, e.request_id.inner(), t, spec);
                    }
                }
                Some(e) = frames_in.next() => {
                    let t = *e.timestamp.inner();
                    // Text frames only (opcode 1): a binary frame's bytes
                    // are not an event of any format spoken here.
                    if e.response.opcode == 1.0
                        && let Some(r) = self.socket_req(&mut reqs, &mut order, e.request_id.inner(), t, spec)
                        && r.answer
                    {
                        r.feed_frame(&e.response.payload_data, t, spec);
                    }
                }
                Some(e) = closed.next() => {
                    if let Some(r) = reqs.get_mut(e.request_id.inner()) {
                        r.end_s.get_or_insert(*e.timestamp.inner());
                    }
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
            let url = linker(chosen, origin(&reqs, &order)).map(|r| r.url.clone());
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
            if ended && s.first_dom.is_none() && quiet_after_end(&s, chosen, settle_ms) {
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
}
