//! Server-sent events framing, after the WHATWG HTML standard
//! ("Interpreting an event stream", §9.2.6): lines end in CRLF, LF or CR;
//! lines starting with `:` are comments; `event`, `data`, `id` and `retry`
//! fields; one optional space after the colon is dropped; several `data`
//! lines join with LF; an empty line dispatches; an event with no data is
//! not dispatched; a leading UTF-8 BOM is ignored. Input may be split at any
//! byte, including between CR and LF and inside a UTF-8 character: bytes are
//! kept until a line ends and decoded only then.
//!
//! Sans-IO: [`SseParser::feed`] takes bytes and hands back events; it never
//! allocates per byte (its buffers are reused across events), looks at each
//! byte once, and holds at most one line plus one event's data, each bounded
//! by a maximum size: a longer line or event stops the parser
//! ([`SseParser::oversize`]) instead of growing without limit.

use std::borrow::Cow;

use firsttoken_plan::DEFAULT_MAX_EVENT_BYTES;

use super::lines::Oversize;

/// One dispatched event.
#[derive(Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event` field, `message` when absent.
    pub event: &'a str,
    /// The joined `data` lines (decoded as UTF-8, invalid sequences replaced).
    pub data: Cow<'a, str>,
    /// Byte offset in the body where the event's first line started.
    pub offset: u64,
}

/// Incremental SSE parser.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    event: String,
    has_data: bool,
    after_cr: bool,
    bom_checked: bool,
    consumed: u64,
    line_start: u64,
    event_start: Option<u64>,
    comments: u64,
    max: usize,
    oversize: Option<Oversize>,
}

impl Default for SseParser {
    fn default() -> SseParser {
        SseParser::new()
    }
}

impl SseParser {
    /// A parser at the start of a stream, with the default bound
    /// ([`DEFAULT_MAX_EVENT_BYTES`]) on a line and on an event's data.
    pub fn new() -> SseParser {
        SseParser::with_max(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A parser that refuses a line, or an event's joined data, over `max` bytes.
    pub fn with_max(max: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            data: Vec::new(),
            event: String::new(),
            has_data: false,
            after_cr: false,
            bom_checked: false,
            consumed: 0,
            line_start: 0,
            event_start: None,
            comments: 0,
            max,
            oversize: None,
        }
    }

    /// Start counting offsets at `n`: the caller dropped `n` bytes of
    /// leading whitespace (no BOM can follow it).
    pub(crate) fn skip(&mut self, n: u64) {
        if n > 0 {
            self.consumed += n;
            self.line_start += n;
            self.bom_checked = true;
        }
    }

    /// The line or event that exceeded the bound, once one did; input after it is ignored.
    pub fn oversize(&self) -> Option<Oversize> {
        self.oversize
    }

    /// Bytes held for an unfinished line and event (each at most the bound).
    pub fn buffered(&self) -> usize {
        self.line.len() + self.data.len() + self.event.len()
    }

    fn refuse(&mut self, offset: u64, bytes: usize) {
        self.oversize = Some(Oversize {
            offset,
            bytes,
            max: self.max,
        });
        self.line = Vec::new();
        self.data = Vec::new();
        self.event = String::new();
        self.has_data = false;
    }

    /// Comment lines seen so far (keep-alives such as `: OPENROUTER PROCESSING`).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// True when bytes of an unfinished line or event are buffered.
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    /// Feed the next bytes; `on_event` is called for each complete event.
    pub fn feed(&mut self, mut bytes: &[u8], on_event: &mut dyn FnMut(SseEvent<'_>)) {
        if self.oversize.is_some() {
            return;
        }
        if !self.bom_checked {
            // The BOM may itself arrive split; wait for 3 bytes or a non-BOM prefix.
            let want = [0xEFu8, 0xBB, 0xBF];
            let have = self.line.len();
            let take = (3 - have).min(bytes.len());
            let candidate: Vec<u8> = self.line.iter().chain(&bytes[..take]).copied().collect();
            if want.starts_with(&candidate) {
                if candidate.len() < 3 {
                    self.line.extend_from_slice(&bytes[..take]);
                    self.consumed += take as u64;
                    return;
                }
                self.line.clear();
                self.consumed += take as u64;
                bytes = &bytes[take..];
                self.line_start = self.consumed;
            }
            self.bom_checked = true;
        }
        while !bytes.is_empty() && self.oversize.is_none() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    self.consumed += 1;
                    self.line_start = self.consumed;
                    continue;
                }
            }
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    if self.line.len() + bytes.len() > self.max {
                        return self.refuse(self.line_start, self.line.len() + bytes.len());
                    }
                    self.line.extend_from_slice(bytes);
                    self.consumed += bytes.len() as u64;
                    return;
                }
                Some(i) => {
                    if self.line.len() + i > self.max {
                        return self.refuse(self.line_start, self.line.len() + i);
                    }
                    self.after_cr = bytes[i] == b'\r';
                    self.consumed += i as u64 + 1;
                    if self.line.is_empty() {
                        self.process_line(&bytes[..i], on_event);
                    } else {
                        self.line.extend_from_slice(&bytes[..i]);
                        let line = std::mem::take(&mut self.line);
                        self.process_line(&line, on_event);
                        self.line = line;
                        self.line.clear();
                    }
                    self.line_start = self.consumed;
                    bytes = &bytes[i + 1..];
                }
            }
        }
    }

    fn process_line(&mut self, line: &[u8], on_event: &mut dyn FnMut(SseEvent<'_>)) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            self.comments += 1;
            return;
        }
        if self.event_start.is_none() {
            self.event_start = Some(self.line_start);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let joined = self.data.len() + value.len();
                if joined > self.max {
                    let start = self.event_start.unwrap_or(self.line_start);
                    return self.refuse(start, joined);
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            b"event" => {
                // Each invalid byte becomes U+FFFD (3 bytes), so a name can
                // decode to three times its line: bounded like the data.
                let name = String::from_utf8_lossy(value);
                if name.len() > self.max {
                    let start = self.event_start.unwrap_or(self.line_start);
                    return self.refuse(start, name.len());
                }
                self.event.clear();
                self.event.push_str(&name);
            }
            // `id` and `retry` change reconnection state only; a one-shot
            // measurement never reconnects, so they are read and ignored.
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut dyn FnMut(SseEvent<'_>)) {
        let offset = self.event_start.take().unwrap_or(self.line_start);
        if self.has_data {
            let data = &self.data[..self.data.len() - 1];
            let event = if self.event.is_empty() {
                "message"
            } else {
                self.event.as_str()
            };
            on_event(SseEvent {
                event,
                data: String::from_utf8_lossy(data),
                offset,
            });
        }
        self.data.clear();
        self.event.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut |e| {
                out.push((e.event.to_string(), e.data.into_owned()))
            });
        }
        out
    }

    #[test]
    fn line_endings_comments_fields_and_multiline_data() {
        let body = b": keep-alive\r\nevent: add\r\ndata: a\r\ndata:b\r\nid: 7\r\nretry: 10\r\n\r\ndata: x\rdata:  y\r\rdata: z\n\n";
        assert_eq!(
            parse_all(&[body]),
            vec![
                ("add".into(), "a\nb".into()),
                ("message".into(), "x\n y".into()),
                ("message".into(), "z".into())
            ]
        );
    }

    #[test]
    fn no_data_no_dispatch_and_field_without_colon() {
        assert_eq!(
            parse_all(&[b"event: ping\n\ndata\n\n"]),
            vec![("message".into(), "".into())]
        );
        // An unfinished event at the end is not dispatched.
        assert_eq!(parse_all(&[b"data: partial"]), vec![]);
    }

    #[test]
    fn bom_and_split_crlf_and_split_utf8() {
        let body = "\u{feff}data: h\u{e9}llo \u{1F600}\r\n\r\n".as_bytes();
        for i in 0..body.len() {
            for j in i..body.len() {
                let got = parse_all(&[&body[..i], &body[i..j], &body[j..]]);
                assert_eq!(
                    got,
                    vec![("message".into(), "h\u{e9}llo \u{1F600}".into())],
                    "split at {i},{j}"
                );
            }
        }
    }

    /// Found by the `decode` fuzz target: an event name of invalid UTF-8
    /// decodes to 3 bytes a byte, so the parser held three times its bound.
    #[test]
    fn an_invalid_utf8_event_name_is_held_to_the_bound() {
        let mut p = SseParser::with_max(64);
        let mut line = b"event: ".to_vec();
        line.extend([0xD2; 50]);
        line.push(b'\n');
        let mut events = 0;
        p.feed(&line, &mut |_| events += 1);
        assert!(p.buffered() <= 64, "holds {} bytes", p.buffered());
        let o = p
            .oversize()
            .expect("a 150-byte name is over a 64-byte bound");
        assert_eq!((o.offset, o.bytes, o.max), (0, 150, 64));
        // A valid name of the same raw length is kept as it is.
        let mut p = SseParser::with_max(64);
        p.feed(b"event: add\ndata: x\n\n", &mut |e| {
            assert_eq!(e.event, "add");
            events += 1;
        });
        assert_eq!((events, p.oversize()), (1, None));
    }

    #[test]
    fn offsets_point_at_event_starts() {
        let mut p = SseParser::new();
        let mut offs = Vec::new();
        p.feed(b": c\n\ndata: a\n\nevent: e\ndata: b\n\n", &mut |e| {
            offs.push(e.offset)
        });
        assert_eq!(offs, vec![5, 14]);
        assert_eq!(p.comments(), 1);
    }

    fn oracle_stream() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            "[a-z é😀]{0,8}".prop_map(|s| format!("data: {s}")),
            "[a-z]{0,5}".prop_map(|s| format!("event: {s}")),
            Just(": comment".to_string()),
            Just(String::new()),
            Just("id: 1".to_string()),
        ];
        let eol = prop_oneof![Just("\n"), Just("\r"), Just("\r\n")];
        proptest::collection::vec((line, eol), 0..25).prop_map(|v| {
            let mut s = String::new();
            for (l, e) in v {
                s.push_str(&l);
                s.push_str(e);
            }
            s.push_str("\n\n");
            s.into_bytes()
        })
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_events(body in oracle_stream(), cuts in proptest::collection::vec(0usize..500, 0..12)) {
            let whole = parse_all(&[&body]);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (body.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut start = 0;
            for c in cuts {
                chunks.push(&body[start..c]);
                start = c;
            }
            chunks.push(&body[start..]);
            prop_assert_eq!(parse_all(&chunks), whole);
        }
    }
}
