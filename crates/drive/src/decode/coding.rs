//! Content codings (RFC 9110 §8.4.1): what the client asks for and how a
//! compressed body is turned back into the stream's bytes.
//!
//! Decoding is synchronous and per received chunk, so every chunk keeps its
//! wire arrival stamp: `ttfb` stays the first byte on the wire and `ttft` the
//! first decoded content token. Output is handed on in pieces of at most
//! [`PIECE`] bytes, so the stream decoder's per-event bound applies to a
//! decompression bomb as to any other body, and stops it early.

use brotli_decompressor::{BrotliDecompressStream, BrotliResult, BrotliState, StandardAlloc};
use flate2::{Decompress, FlushDecompress, Status};
use zstd::stream::raw::{DParameter, Decoder as ZstdDecoder, InBuffer, Operation, OutBuffer};

use super::formats::bounded;

/// The `Accept-Encoding` a current browser sends.
pub const BROWSER_ACCEPT_ENCODING: &str = "gzip, deflate, br, zstd";

/// Largest piece of decoded output handed on at a time.
pub const PIECE: usize = 16 * 1024;

/// Largest zstd window accepted, as a power of two: 8 MiB, the limit RFC
/// 8878 §3.1.1.1.2 sets for HTTP (browsers refuse larger windows too).
const ZSTD_WINDOW_LOG_MAX: u32 = 23;

/// A content coding the client can undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// gzip (RFC 1952), also named `x-gzip`.
    Gzip,
    /// zlib-wrapped deflate (RFC 1950); raw deflate, which some servers
    /// send instead, is accepted too, as browsers do.
    Deflate,
    /// Brotli (RFC 7932).
    Brotli,
    /// Zstandard (RFC 8878).
    Zstd,
}

impl Coding {
    /// The coding a `Content-Encoding` token names, if the client knows it.
    pub fn parse(token: &str) -> Option<Coding> {
        match token.to_ascii_lowercase().as_str() {
            "gzip" | "x-gzip" => Some(Coding::Gzip),
            "deflate" => Some(Coding::Deflate),
            "br" => Some(Coding::Brotli),
            "zstd" => Some(Coding::Zstd),
            _ => None,
        }
    }

    /// Its name in headers.
    pub fn as_str(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Brotli => "br",
            Coding::Zstd => "zstd",
        }
    }
}

/// Was `coding` asked for by this `Accept-Encoding` value? A coding listed
/// with `q=0` is refused; `*` stands for every coding not listed.
fn asked(accept: Option<&str>, coding: &str) -> bool {
    let Some(accept) = accept else {
        // No Accept-Encoding means any coding is acceptable (RFC 9110 §12.5.3).
        return true;
    };
    let canon = |t: &str| match t {
        "x-gzip" => "gzip".to_string(),
        other => other.to_string(),
    };
    let want = canon(&coding.to_ascii_lowercase());
    let mut star = None;
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let name = canon(&parts.next().unwrap_or("").trim().to_ascii_lowercase());
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|v| v.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if name == want {
            return q > 0.0;
        }
        if name == "*" {
            star = Some(q > 0.0);
        }
    }
    star.unwrap_or(false)
}

/// What a response's `Content-Encoding` asks the client to undo, given the
/// `Accept-Encoding` it sent. `Ok(None)`: the body is not encoded.
/// `Err`: the `decode` failure to report (an encoding that was not asked
/// for, is unknown, or is stacked).
pub fn plan(
    content_encoding: Option<&str>,
    accept: Option<&str>,
) -> Result<Option<Coding>, String> {
    let Some(value) = content_encoding else {
        return Ok(None);
    };
    let codings: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case("identity"))
        .collect();
    let token = match codings.as_slice() {
        [] => return Ok(None),
        [one] => *one,
        _ => {
            return Err(format!(
                "server sent stacked Content-Encoding: {}; one coding at a time is decoded",
                bounded(value)
            ));
        }
    };
    if !asked(accept, token) {
        return Err(format!(
            "server sent Content-Encoding: {} unasked (Accept-Encoding: {})",
            bounded(token),
            accept.unwrap_or("none")
        ));
    }
    Coding::parse(token).map(Some).ok_or_else(|| {
        format!(
            "server sent Content-Encoding: {}, which cannot be decoded",
            bounded(token)
        )
    })
}

/// A streaming decoder for one response body.
pub struct Inflater {
    codec: Codec,
    coding: Coding,
    out: Box<[u8]>,
    /// The compressed stream's end marker was seen.
    ended: bool,
}

enum Codec {
    Flate(Decompress),
    /// Deflate before its first two bytes tell zlib from raw.
    DeflateUndecided(Vec<u8>),
    Brotli(Box<BrotliState<StandardAlloc, StandardAlloc, StandardAlloc>>),
    Zstd(Box<ZstdDecoder<'static>>),
}

/// Where decoded pieces go; returns false to stop decoding (the consumer
/// has failed and wants no more).
pub type Sink<'a> = dyn FnMut(&[u8]) -> bool + 'a;

impl Inflater {
    /// A decoder for `coding`.
    pub fn new(coding: Coding) -> Result<Inflater, String> {
        let codec = match coding {
            Coding::Gzip => Codec::Flate(Decompress::new_gzip(15)),
            Coding::Deflate => Codec::DeflateUndecided(Vec::new()),
            // Standard window sizes only (at most 16 MiB); the large-window
            // extension is not part of HTTP's `br`.
            Coding::Brotli => Codec::Brotli(Box::new(BrotliState::new_strict(
                StandardAlloc::default(),
                StandardAlloc::default(),
                StandardAlloc::default(),
            ))),
            Coding::Zstd => {
                let mut d = ZstdDecoder::new()
                    .map_err(|e| format!("cannot set up the zstd decoder: {e}"))?;
                d.set_parameter(DParameter::WindowLogMax(ZSTD_WINDOW_LOG_MAX))
                    .map_err(|e| format!("cannot limit the zstd window: {e}"))?;
                Codec::Zstd(Box::new(d))
            }
        };
        Ok(Inflater {
            codec,
            coding,
            out: vec![0u8; PIECE].into_boxed_slice(),
            ended: false,
        })
    }

    /// The coding it undoes.
    pub fn coding(&self) -> Coding {
        self.coding
    }

    /// Decode `input`, handing the output to `sink` in pieces of at most
    /// [`PIECE`] bytes. Stops early when `sink` returns false. `Err` names
    /// what is wrong with the compressed bytes.
    pub fn feed(&mut self, input: &[u8], sink: &mut Sink<'_>) -> Result<(), String> {
        if input.is_empty() {
            return Ok(());
        }
        if let Codec::DeflateUndecided(pending) = &mut self.codec {
            pending.extend_from_slice(input);
            if pending.len() < 2 {
                return Ok(());
            }
            let first = std::mem::take(pending);
            // A zlib header: compression method 8 and a check value that
            // makes the first two bytes a multiple of 31 (RFC 1950 §2.2).
            let zlib =
                first[0] & 0x0f == 8 && (u16::from(first[0]) << 8 | u16::from(first[1])) % 31 == 0;
            self.codec = Codec::Flate(Decompress::new(zlib));
            return self.feed(&first, sink);
        }
        if self.ended && self.coding != Coding::Zstd {
            if self.coding == Coding::Gzip {
                // RFC 1952 allows several members one after another.
                self.codec = Codec::Flate(Decompress::new_gzip(15));
                self.ended = false;
            } else {
                return Err(format!(
                    "data after the end of the {} stream",
                    self.coding.as_str()
                ));
            }
        }
        let name = self.coding.as_str();
        let out = &mut self.out;
        match &mut self.codec {
            Codec::DeflateUndecided(_) => Ok(()),
            Codec::Flate(d) => {
                let mut rest = input;
                loop {
                    let (in0, out0) = (d.total_in(), d.total_out());
                    let status = d
                        .decompress(rest, out, FlushDecompress::None)
                        .map_err(|e| format!("invalid {name} data: {e}"))?;
                    let used = (d.total_in() - in0) as usize;
                    let made = (d.total_out() - out0) as usize;
                    rest = &rest[used.min(rest.len())..];
                    if made > 0 && !sink(&out[..made]) {
                        return Ok(());
                    }
                    if status == Status::StreamEnd {
                        self.ended = true;
                        return if rest.is_empty() {
                            Ok(())
                        } else {
                            self.feed(rest, sink)
                        };
                    }
                    // Done with this chunk when the output buffer was not
                    // filled and nothing more was taken in.
                    if made < out.len() && (rest.is_empty() || used == 0) {
                        return Ok(());
                    }
                }
            }
            Codec::Brotli(state) => {
                let (mut avail_in, mut in_off) = (input.len(), 0usize);
                loop {
                    let (mut avail_out, mut out_off, mut total) = (out.len(), 0usize, 0usize);
                    let r = BrotliDecompressStream(
                        &mut avail_in,
                        &mut in_off,
                        input,
                        &mut avail_out,
                        &mut out_off,
                        out,
                        &mut total,
                        &mut **state,
                    );
                    if out_off > 0 && !sink(&out[..out_off]) {
                        return Ok(());
                    }
                    match r {
                        BrotliResult::NeedsMoreOutput => continue,
                        // With its input used up and the buffer full the
                        // decoder may still hold output that needs no more
                        // input: drain it now, not when the next chunk comes.
                        BrotliResult::NeedsMoreInput if out_off == out.len() => continue,
                        BrotliResult::NeedsMoreInput => return Ok(()),
                        BrotliResult::ResultSuccess => {
                            self.ended = true;
                            return if avail_in == 0 {
                                Ok(())
                            } else {
                                Err("data after the end of the br stream".into())
                            };
                        }
                        BrotliResult::ResultFailure => {
                            return Err(format!(
                                "invalid br data at compressed byte {} of this chunk",
                                in_off
                            ));
                        }
                    }
                }
            }
            Codec::Zstd(d) => {
                let mut inb = InBuffer::around(input);
                loop {
                    let before = inb.pos();
                    let mut outb = OutBuffer::around(&mut out[..]);
                    // 0: a frame just ended (another may follow).
                    let hint = d
                        .run(&mut inb, &mut outb)
                        .map_err(|e| format!("invalid zstd data: {e}"))?;
                    let made = outb.pos();
                    self.ended = hint == 0;
                    if made > 0 && !sink(&out[..made]) {
                        return Ok(());
                    }
                    if made < out.len() && (inb.pos() == input.len() || inb.pos() == before) {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// The body ended: `Err` when the compressed stream had not.
    pub fn finish(&self) -> Result<(), String> {
        if self.ended {
            Ok(())
        } else {
            Err(format!(
                "the body ended inside the {} stream (no end marker)",
                self.coding.as_str()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn decode_all(coding: Coding, body: &[u8], split: usize) -> Result<Vec<u8>, String> {
        let mut inf = Inflater::new(coding)?;
        let mut out = Vec::new();
        for c in body.chunks(split.max(1)) {
            inf.feed(c, &mut |p| {
                assert!(p.len() <= PIECE);
                out.extend_from_slice(p);
                true
            })?;
        }
        inf.finish()?;
        Ok(out)
    }

    /// Found by the `inflate` fuzz target: fed whole, a br stream whose
    /// input ran out just as the 16 KiB buffer filled released 16,384
    /// bytes; split, 24,088. The rest waited for the next chunk, which
    /// would have delayed the stamp of any content in it.
    #[test]
    fn br_output_is_released_without_waiting_for_more_input() {
        // fuzz/regressions/inflate/br-output-held-until-next-chunk
        // without its selector byte: a truncated br stream.
        let hex = concat!(
            "d8020202bd847122c3a17524c2bb570152adac2367002c15000000006c840183a8a6be635be324822effffffffffffffffff",
            "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7933e91249e"
        );
        let body: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let released = |split: usize| {
            let mut inf = Inflater::new(Coding::Brotli).unwrap();
            let mut out = 0;
            for c in body.chunks(split) {
                inf.feed(c, &mut |p| {
                    out += p.len();
                    true
                })
                .unwrap();
            }
            out
        };
        let whole = released(body.len());
        assert!(whole > PIECE, "fed whole, only {whole} bytes came out");
        assert_eq!(whole, released(1), "one byte at a time");
        assert_eq!(whole, released(7), "seven bytes at a time");
    }

    #[test]
    fn unasked_unknown_and_stacked_codings_are_named() {
        let browser = Some(BROWSER_ACCEPT_ENCODING);
        assert_eq!(plan(None, Some("identity")), Ok(None));
        assert_eq!(plan(Some("identity"), Some("identity")), Ok(None));
        let e = plan(Some("gzip"), Some("identity")).unwrap_err();
        assert!(
            e.starts_with("server sent Content-Encoding: gzip unasked"),
            "{e}"
        );
        assert_eq!(plan(Some("gzip"), browser), Ok(Some(Coding::Gzip)));
        assert_eq!(plan(Some("X-Gzip"), browser), Ok(Some(Coding::Gzip)));
        assert_eq!(plan(Some("br"), browser), Ok(Some(Coding::Brotli)));
        assert_eq!(plan(Some("zstd"), browser), Ok(Some(Coding::Zstd)));
        assert_eq!(plan(Some("deflate"), browser), Ok(Some(Coding::Deflate)));
        assert!(plan(Some("gzip"), Some("gzip;q=0, br")).is_err());
        assert_eq!(plan(Some("br"), Some("*")), Ok(Some(Coding::Brotli)));
        assert!(
            plan(Some("compress"), Some("*"))
                .unwrap_err()
                .contains("cannot be decoded")
        );
        assert!(
            plan(Some("gzip, br"), browser)
                .unwrap_err()
                .contains("stacked")
        );
    }

    #[test]
    fn every_coding_round_trips_at_every_split() {
        let text: Vec<u8> = (0..5000)
            .flat_map(|i| format!("data: {{\"n\":{i}}}\n\n").into_bytes())
            .collect();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zlib.write_all(&text).unwrap();
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(&text).unwrap();
        let mut br = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
            w.write_all(&text).unwrap();
        }
        let cases = [
            (Coding::Gzip, gzip(&text)),
            (Coding::Deflate, zlib.finish().unwrap()),
            (Coding::Deflate, raw.finish().unwrap()),
            (Coding::Brotli, br),
            (Coding::Zstd, zstd::encode_all(&text[..], 3).unwrap()),
        ];
        for (coding, body) in cases {
            for split in [1, 2, 7, 1000, body.len()] {
                let out = decode_all(coding, &body, split)
                    .unwrap_or_else(|e| panic!("{coding:?} split {split}: {e}"));
                assert!(out == text, "{coding:?} split {split}");
            }
        }
    }

    #[test]
    fn truncated_and_corrupt_streams_fail() {
        let body = gzip(b"hello world");
        let e = decode_all(Coding::Gzip, &body[..body.len() - 4], 1000).unwrap_err();
        assert!(e.contains("ended inside the gzip stream"), "{e}");
        let e = decode_all(Coding::Gzip, b"not gzip at all", 1000).unwrap_err();
        assert!(e.contains("invalid gzip data"), "{e}");
        let e = decode_all(Coding::Zstd, b"\x28\xb5\x2f\xfd garbage", 1000).unwrap_err();
        assert!(e.contains("zstd"), "{e}");
        let e = decode_all(Coding::Brotli, b"\xff\xff\xff\xff\xff\xff", 1000).unwrap_err();
        assert!(e.contains("br"), "{e}");
        // Two gzip members one after the other are one body.
        let mut two = gzip(b"a");
        two.extend(gzip(b"b"));
        assert_eq!(decode_all(Coding::Gzip, &two, 3).unwrap(), b"ab");
    }

    #[test]
    fn a_sink_that_stops_stops_a_bomb() {
        // 8 MiB of zeros in about 8 KiB.
        let bomb = gzip(&vec![0u8; 8 << 20]);
        let mut inf = Inflater::new(Coding::Gzip).unwrap();
        let mut seen = 0usize;
        inf.feed(&bomb, &mut |p| {
            seen += p.len();
            seen < 1 << 20
        })
        .unwrap();
        assert!((1 << 20..(1 << 20) + PIECE).contains(&seen), "{seen}");
    }
}
