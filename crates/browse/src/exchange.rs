//! What one message's exchange looked like to the browser: the requests
//! seen after the user's action, which one carried the answer and which
//! one started the message, and everything put on the DevTools clock.

use std::collections::HashMap;

use base64::Engine;
use chromiumoxide::cdp::browser_protocol::network::{
    EventRequestWillBeSent, ResourceTiming, ResourceType,
};
use firsttoken_drive::decode::Decoder;
use serde::Deserialize;

use firsttoken_record::{ErrorKind, SampleError};

use crate::{BrowseSpec, ClockLink, Measured};

/// A request seen after the user's action.
pub(crate) struct Req {
    pub(crate) url: String,
    /// `Network.requestWillBeSent`, seconds on the DevTools clock.
    pub(crate) start_s: f64,
    /// Its wall time, seconds since the epoch.
    pub(crate) wall_s: f64,
    pub(crate) status: Option<u16>,
    pub(crate) protocol: Option<String>,
    pub(crate) timing: Option<ResourceTiming>,
    pub(crate) decoder: Option<Decoder>,
    pub(crate) content_type: Option<String>,
    pub(crate) first_data_s: Option<f64>,
    pub(crate) content_s: Vec<f64>,
    pub(crate) end_s: Option<f64>,
    /// Content arrived before streaming was on, at an unknown time.
    pub(crate) content_unstamped: bool,
    /// It may carry the answer (`request_match`, or any request).
    pub(crate) answer: bool,
    /// It is the message's start (`send_match`).
    pub(crate) send: bool,
    /// A WebSocket: frames, no HTTP response or resource timing; its
    /// `start_s` is the first frame it sent after the action (else the
    /// first it received), its `wall_s` from its handshake (NaN: unknown).
    pub(crate) socket: bool,
}

/// The page's stamps (`__firsttoken.read()`), on its own clock (ms).
#[derive(Debug, Deserialize)]
pub(crate) struct PageStamps {
    pub(crate) now: f64,
    pub(crate) time_origin: f64,
    pub(crate) input: Option<f64>,
    pub(crate) first_dom: Option<f64>,
    pub(crate) first_paint: Option<f64>,
    pub(crate) last_dom: Option<f64>,
    pub(crate) last_paint: Option<f64>,
    #[serde(default)]
    pub(crate) rt: Vec<ResourceEntry>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ResourceEntry {
    pub(crate) request_start: f64,
}

/// True when the page's clock has passed the request's end by `settle`.
pub(crate) fn quiet_after_end(s: &PageStamps, r: Option<&Req>, settle_ms: f64) -> bool {
    let Some(r) = r else { return false };
    let Some(end) = r.end_s else { return false };
    // The end on the page's clock, through wall time (the resource
    // entry may not exist for a failed request).
    let end_page = end * 1000.0 + (r.wall_s - r.start_s) * 1000.0 - s.time_origin;
    s.now - end_page >= settle_ms
}

/// Whether a request or socket at `url` may carry the answer
/// (`request_match`, or any) and whether it is the message's start
/// (`send_match`).
fn roles(url: &str, spec: &BrowseSpec) -> (bool, bool) {
    let answer = spec
        .request_match
        .as_ref()
        .is_none_or(|m| url.contains(m.as_str()));
    let send = spec
        .send_match
        .as_ref()
        .is_some_and(|m| url.contains(m.as_str()));
    (answer, send)
}

pub(crate) fn candidate(e: &EventRequestWillBeSent, spec: &BrowseSpec) -> Option<Req> {
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
    let (answer, send) = roles(url, spec);
    if !answer && !send {
        return None;
    }
    Some(Req::new(
        &e.request.url,
        *e.timestamp.inner(),
        *e.wall_time.inner(),
        (answer, send, false),
    ))
}

impl Req {
    /// Feed body bytes; true when they carried a content token.
    pub(crate) fn feed(&mut self, bytes: &[u8], spec: &BrowseSpec) -> bool {
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

    /// A WebSocket at `url` first seen after the action at `start_s`
    /// (`link`: its wall time minus its DevTools time, from the handshake).
    pub(crate) fn socket(url: &str, start_s: f64, link: Option<f64>, spec: &BrowseSpec) -> Req {
        let (answer, send) = roles(url, spec);
        let wall_s = link.map_or(f64::NAN, |l| start_s + l);
        Req::new(url, start_s, wall_s, (answer, send, true))
    }

    /// A request or socket at `url`, nothing received yet; `(answer, send,
    /// socket)` as the fields of those names.
    fn new(
        url: &str,
        start_s: f64,
        wall_s: f64,
        (answer, send, socket): (bool, bool, bool),
    ) -> Req {
        Req {
            url: url.to_string(),
            start_s,
            wall_s,
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
            socket,
        }
    }

    /// Feed one text frame the page received at `t` (s); true when it
    /// carried a content token. With `socket_event`, only that Socket.IO
    /// event counts, its payload decoded, and `true` at `socket_done` ends
    /// the answer (that event is no token); otherwise each frame is one
    /// whole event of the format, and the format's own end ends it.
    pub(crate) fn feed_frame(&mut self, frame: &str, t: f64, spec: &BrowseSpec) -> bool {
        self.first_data_s.get_or_insert(t);
        let payload = match &spec.socket_event {
            Some(name) => match firsttoken_drive::socketio_event(frame) {
                Some((n, payload)) if &n == name => {
                    if let Some(p) = &spec.socket_done
                        && payload.pointer(p) == Some(&serde_json::Value::Bool(true))
                    {
                        self.end_s.get_or_insert(t);
                        return false;
                    }
                    payload.to_string()
                }
                _ => return false,
            },
            None => frame.to_string(),
        };
        let d = self.decoder.get_or_insert_with(|| {
            Decoder::for_messages(&spec.format, firsttoken_plan::DEFAULT_MAX_EVENT_BYTES)
        });
        let content = d.feed_event(&payload).content;
        if d.facts().done || d.facts().error.is_some() {
            self.end_s.get_or_insert(t);
        }
        if content {
            self.content_s.push(t);
        }
        content
    }
}

pub(crate) fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .unwrap_or_default()
}

pub(crate) fn header(
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
pub(crate) fn choose<'a>(reqs: &'a HashMap<String, Req>, order: &[String]) -> Option<&'a Req> {
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
pub(crate) fn origin<'a>(reqs: &'a HashMap<String, Req>, order: &[String]) -> Option<&'a Req> {
    order.iter().filter_map(|id| reqs.get(id)).find(|r| r.send)
}

pub(crate) fn page_error(message: String) -> Measured {
    Measured {
        error: Some(SampleError {
            kind: ErrorKind::PageError,
            message,
        }),
        ..empty()
    }
}

pub(crate) fn empty() -> Measured {
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
pub(crate) fn clock_offset(r: &Req, s: &PageStamps) -> Option<(f64, ClockLink)> {
    let wall = s.time_origin - (r.wall_s - r.start_s) * 1000.0;
    if !wall.is_finite() {
        // A socket whose handshake was not seen: no link at all.
        return None;
    }
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
    Some(match best {
        Some(off) => (off, ClockLink::ResourceTiming),
        None => (wall, ClockLink::WallTime),
    })
}

/// The request whose clock links the page's: the message's start when it
/// is an HTTP request (it has a resource-timing entry), else the answer's.
pub(crate) fn linker<'a>(r: Option<&'a Req>, send: Option<&'a Req>) -> Option<&'a Req> {
    send.filter(|s| !s.socket).or(r)
}

/// Everything on the DevTools clock, as ms from the message's start: the
/// `send` request's when there is one, else the answer's request's.
pub(crate) fn assemble(
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
    let linked = linker(Some(r), send).and_then(|l| clock_offset(l, s));
    let clock = linked.map_or(ClockLink::None, |(_, c)| c);
    let page = |v: Option<f64>| Some(v? + linked?.0 - start_ms);
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
