//! Newline-delimited framing (NDJSON, as Ollama streams) and incremental
//! UTF-8 validation for plain text streams. Both accept input split at any
//! byte, look at each byte once (linear in the bytes received) and buffer at
//! most one line, bounded by a maximum size.

use firsttoken_plan::DEFAULT_MAX_EVENT_BYTES;

/// A line or event longer than the decoder's bound: the stream is refused
/// rather than buffered without limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Oversize {
    /// Body offset where the line or event started.
    pub offset: u64,
    /// Bytes it had reached when it was refused (more than `max`).
    pub bytes: usize,
    /// The bound in bytes.
    pub max: usize,
}

impl std::fmt::Display for Oversize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a stream event or line starting at byte offset {} reached {} bytes, over the {}-byte limit (--max-event-bytes)",
            self.offset, self.bytes, self.max
        )
    }
}

/// Splits a byte stream into LF-terminated lines (a trailing CR is dropped).
/// A line longer than its bound stops the splitter (see [`LineSplitter::oversize`]).
#[derive(Debug)]
pub struct LineSplitter {
    line: Vec<u8>,
    consumed: u64,
    line_start: u64,
    max: usize,
    oversize: Option<Oversize>,
}

impl Default for LineSplitter {
    fn default() -> LineSplitter {
        LineSplitter::with_max(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl LineSplitter {
    /// A splitter that refuses lines longer than `max` bytes.
    pub fn with_max(max: usize) -> LineSplitter {
        LineSplitter {
            line: Vec::new(),
            consumed: 0,
            line_start: 0,
            max,
            oversize: None,
        }
    }

    /// Start counting offsets at `n` (bytes before the splitter saw any).
    pub(crate) fn skip(&mut self, n: u64) {
        self.consumed += n;
        self.line_start += n;
    }

    /// The line that exceeded the bound, once one did; input after it is ignored.
    pub fn oversize(&self) -> Option<Oversize> {
        self.oversize
    }

    /// Bytes held for an unfinished line (never more than the bound).
    pub fn buffered(&self) -> usize {
        self.line.len()
    }

    /// Feed bytes; `on_line(line, offset)` is called for each complete line.
    pub fn feed(&mut self, mut bytes: &[u8], on_line: &mut dyn FnMut(&[u8], u64)) {
        if self.oversize.is_some() {
            return;
        }
        while let Some(i) = bytes.iter().position(|&b| b == b'\n') {
            if self.line.len() + i > self.max {
                return self.refuse(self.line.len() + i);
            }
            self.consumed += i as u64 + 1;
            let start = self.line_start;
            if self.line.is_empty() {
                on_line(strip_cr(&bytes[..i]), start);
            } else {
                self.line.extend_from_slice(&bytes[..i]);
                let line = std::mem::take(&mut self.line);
                on_line(strip_cr(&line), start);
                self.line = line;
                self.line.clear();
            }
            self.line_start = self.consumed;
            bytes = &bytes[i + 1..];
        }
        if self.line.len() + bytes.len() > self.max {
            return self.refuse(self.line.len() + bytes.len());
        }
        self.line.extend_from_slice(bytes);
        self.consumed += bytes.len() as u64;
    }

    fn refuse(&mut self, bytes: usize) {
        self.oversize = Some(Oversize {
            offset: self.line_start,
            bytes,
            max: self.max,
        });
        self.line = Vec::new();
    }

    /// The unterminated last line, if any, with its offset (called at stream end).
    pub fn rest(&self) -> Option<(&[u8], u64)> {
        let l = strip_cr(&self.line);
        if l.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            Some((l, self.line_start))
        }
    }
}

fn strip_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

/// Validates UTF-8 across chunk boundaries, carrying an incomplete trailing
/// sequence (at most 3 bytes) into the next chunk.
#[derive(Debug, Default)]
pub struct Utf8Check {
    carry: [u8; 4],
    carry_len: usize,
    consumed: u64,
}

impl Utf8Check {
    /// Start counting offsets at `n` (bytes before the check saw any).
    pub(crate) fn skip(&mut self, n: u64) {
        self.consumed += n;
    }

    /// Check the next chunk. `Err(offset)` names the body offset of the first invalid byte.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), u64> {
        let mut rest = bytes;
        if self.carry_len > 0 {
            // Complete the carried sequence byte by byte.
            while self.carry_len < 4 && !rest.is_empty() {
                self.carry[self.carry_len] = rest[0];
                self.carry_len += 1;
                rest = &rest[1..];
                match std::str::from_utf8(&self.carry[..self.carry_len]) {
                    Ok(_) => {
                        self.consumed += self.carry_len as u64;
                        self.carry_len = 0;
                        break;
                    }
                    Err(e) if e.error_len().is_some() => return Err(self.consumed),
                    Err(_) => {}
                }
            }
            if self.carry_len > 0 {
                return Ok(());
            }
        }
        match std::str::from_utf8(rest) {
            Ok(_) => {
                self.consumed += rest.len() as u64;
                Ok(())
            }
            Err(e) => {
                let valid = e.valid_up_to();
                match e.error_len() {
                    Some(_) => Err(self.consumed + valid as u64),
                    None => {
                        let tail = &rest[valid..];
                        self.carry[..tail.len()].copy_from_slice(tail);
                        self.carry_len = tail.len();
                        self.consumed += valid as u64;
                        Ok(())
                    }
                }
            }
        }
    }

    /// At stream end: `Err(offset)` when an incomplete sequence is left over.
    pub fn finish(&self) -> Result<(), u64> {
        if self.carry_len > 0 {
            Err(self.consumed)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_anywhere() {
        let body = b"{\"a\":1}\r\n\n{\"b\":2}\n{\"c\"";
        for i in 0..body.len() {
            let mut s = LineSplitter::default();
            let mut got = Vec::new();
            s.feed(&body[..i], &mut |l, o| got.push((l.to_vec(), o)));
            s.feed(&body[i..], &mut |l, o| got.push((l.to_vec(), o)));
            assert_eq!(
                got,
                vec![
                    (b"{\"a\":1}".to_vec(), 0),
                    (b"".to_vec(), 9),
                    (b"{\"b\":2}".to_vec(), 10)
                ]
            );
            assert_eq!(s.rest(), Some((&b"{\"c\""[..], 18)));
        }
    }

    #[test]
    fn utf8_split_inside_characters_is_fine() {
        let text = "ab\u{e9}\u{1F600}z".as_bytes();
        for i in 0..=text.len() {
            for j in i..=text.len() {
                let mut c = Utf8Check::default();
                assert!(c.feed(&text[..i]).is_ok());
                assert!(c.feed(&text[i..j]).is_ok());
                assert!(c.feed(&text[j..]).is_ok());
                assert!(c.finish().is_ok());
            }
        }
    }

    #[test]
    fn utf8_errors_name_the_offset() {
        let mut c = Utf8Check::default();
        assert!(c.feed(b"hello ").is_ok());
        assert_eq!(c.feed(b"w\xffx"), Err(7));
        let mut c = Utf8Check::default();
        assert!(c.feed(b"ab\xe2\x82").is_ok());
        assert_eq!(c.feed(b"A"), Err(2));
        let mut c = Utf8Check::default();
        assert!(c.feed(b"ab\xe2").is_ok());
        assert_eq!(c.finish(), Err(2));
    }
}
