//! A transport tap: wraps the plaintext stream (above TLS, so TLS records
//! such as session tickets never look like response bytes) and stamps the
//! moment the current request was fully written and its first response byte
//! arrived.
//!
//! HTTP/1.1: "sent" is the last write before the first read of the request,
//! "first byte" the first read. HTTP/2 multiplexes control frames (SETTINGS,
//! WINDOW_UPDATE, PING) on the same bytes, so the tap reads 9-byte frame
//! headers in both directions: "sent" is the write that carried END_STREAM on
//! a request stream, "first byte" the first HEADERS or DATA frame received on
//! a non-zero stream. One request is in flight per connection at a time
//! (each worker owns its connection), so no stream-id bookkeeping is needed.
//!
//! Every arrival is an [`Arrival`]: the user-space instant the plaintext
//! came out of the stream below, and the kernel receive time of the latest
//! socket read at that moment (reported by [`crate::kstamp::RecvStream`]).
//! That read is the one that completed what was yielded: tokio-rustls reads
//! the socket only while rustls holds no plaintext, so plaintext always
//! comes from records completed by the latest read; hyper reads HTTP/1.1
//! bytes in the poll that yields them.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::kstamp::ClockPair;

/// HTTP/2 client connection preface length ("PRI * HTTP/2.0…").
const H2_PREFACE_LEN: usize = 24;
const FRAME_DATA: u8 = 0x0;
const FRAME_HEADERS: u8 = 0x1;
const FLAG_END_STREAM: u8 = 0x1;

/// A frame header seen by [`FrameScanner`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHead {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub len: usize,
}

/// What [`FrameScanner::scan`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// A frame header was read.
    Head(FrameHead),
    /// The frame's payload is complete.
    End(FrameHead),
}

/// Finds HTTP/2 frame headers in a byte stream split at arbitrary points.
#[derive(Debug, Default)]
pub(crate) struct FrameScanner {
    skip: usize,
    head: [u8; 9],
    head_len: usize,
    payload_left: usize,
    current: Option<FrameHead>,
}

impl FrameScanner {
    /// A scanner that first skips `preface` bytes.
    pub(crate) fn new(preface: usize) -> FrameScanner {
        FrameScanner {
            skip: preface,
            ..FrameScanner::default()
        }
    }

    /// Scan `bytes`, reporting each frame header and each completed payload.
    pub(crate) fn scan(&mut self, mut bytes: &[u8], mut on: impl FnMut(Scan)) {
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
            } else if self.payload_left > 0 {
                let n = self.payload_left.min(bytes.len());
                self.payload_left -= n;
                bytes = &bytes[n..];
                if self.payload_left == 0
                    && let Some(h) = self.current.take()
                {
                    on(Scan::End(h));
                }
            } else {
                let n = (9 - self.head_len).min(bytes.len());
                self.head[self.head_len..self.head_len + n].copy_from_slice(&bytes[..n]);
                self.head_len += n;
                bytes = &bytes[n..];
                if self.head_len == 9 {
                    let h = self.head;
                    self.head_len = 0;
                    self.payload_left =
                        (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                    let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                    let head = FrameHead {
                        kind: h[3],
                        flags: h[4],
                        stream,
                        len: self.payload_left,
                    };
                    on(Scan::Head(head));
                    if self.payload_left == 0 {
                        on(Scan::End(head));
                    } else {
                        self.current = Some(head);
                    }
                }
            }
        }
    }
}

/// When some response bytes arrived, on both clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arrival {
    /// When the plaintext came out of the stream below the tap (user space).
    pub user: Instant,
    /// The kernel's receive time of the socket read that completed those
    /// bytes, never later than `user`; `None` without kernel timestamps.
    pub kernel: Option<Instant>,
    /// Which socket read that was (a per-connection count), so arrivals
    /// that shared one read can be told apart from those that did not.
    pub read: u64,
}

impl Arrival {
    /// The best stamp: the kernel's when there is one.
    pub(crate) fn at(self) -> Instant {
        self.kernel.unwrap_or(self.user)
    }
}

/// How far the real-time clock may move against the monotonic one during
/// a request (and a kernel stamp map past its user-space stamp) before the
/// request's kernel stamps are dropped. A clock pair is good to tens of
/// nanoseconds and NTP slews both clocks alike, so only a step exceeds it.
const STEP_TOLERANCE: Duration = Duration::from_micros(20);

#[derive(Debug, Default)]
struct TapState {
    armed: bool,
    /// Kernel receive timestamps are on for this connection.
    kernel: bool,
    /// Maps the kernel's real-time stamps onto `Instant`s; taken again at each `arm`.
    clocks: ClockPair,
    /// Socket reads so far on this connection.
    raw_reads: u64,
    /// The kernel receive time of the latest socket read.
    raw_kernel: Option<Instant>,
    /// The latest plaintext read.
    last_read: Option<Arrival>,
    last_write: Option<Instant>,
    first_read: Option<Arrival>,
    /// HTTP/2: when the response HEADERS frame was fully read.
    headers_read: Option<Arrival>,
    h2: Option<(FrameScanner, FrameScanner)>,
    /// HTTP/2: completion time of each non-empty DATA frame received, oldest first.
    data_times: VecDeque<Arrival>,
}

impl Default for ClockPair {
    fn default() -> ClockPair {
        ClockPair::now()
    }
}

/// Shared between the wrapped stream and the request that reads the stamps.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tap(Arc<Mutex<TapState>>);

impl Tap {
    fn lock(&self) -> MutexGuard<'_, TapState> {
        // A poisoned lock only means another holder panicked mid-update of
        // plain timestamps; the data is still usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Switch to HTTP/2 frame-aware stamping (client side: our writes start with the preface).
    pub(crate) fn set_http2(&self) {
        self.lock().h2 = Some((FrameScanner::new(H2_PREFACE_LEN), FrameScanner::new(0)));
    }

    /// Record whether kernel receive timestamps are on for this connection.
    pub(crate) fn set_kernel(&self, on: bool) {
        self.lock().kernel = on;
    }

    /// True when kernel receive timestamps are on for this connection.
    #[cfg(test)]
    pub(crate) fn kernel(&self) -> bool {
        self.lock().kernel
    }

    /// A socket read happened; `stamp` is its kernel receive time in ns
    /// since the epoch (real-time clock), when the kernel gave one.
    pub(crate) fn on_raw_read(&self, stamp: Option<i128>) {
        let mut s = self.lock();
        s.raw_reads += 1;
        s.raw_kernel = stamp.and_then(|ns| s.clocks.to_instant(ns));
    }

    /// The kernel time of the latest socket read, if it had one.
    #[cfg(test)]
    pub(crate) fn raw_kernel(&self) -> Option<Instant> {
        self.lock().raw_kernel
    }

    /// The latest plaintext read: what an HTTP/1.1 body chunk handed over
    /// in this poll arrived with.
    pub(crate) fn last_read(&self) -> Option<Arrival> {
        self.lock().last_read
    }

    /// Start stamping a new request.
    pub(crate) fn arm(&self) {
        let clocks = ClockPair::now();
        let mut s = self.lock();
        s.clocks = clocks;
        s.armed = true;
        s.last_write = None;
        s.first_read = None;
        s.data_times.clear();
        s.headers_read = None;
    }

    /// True when kernel stamps are on and the real-time clock moved against
    /// the monotonic one by more than [`STEP_TOLERANCE`] since
    /// [`Tap::arm`] took the clock pair: a step (`settimeofday`, a VM's
    /// clock set on resume) that would shift every kernel stamp of the
    /// request, so the request keeps its user-space stamps.
    pub(crate) fn clock_stepped(&self) -> bool {
        let (kernel, then) = {
            let s = self.lock();
            (s.kernel, s.clocks)
        };
        kernel && then.step_ns(ClockPair::now()).unsigned_abs() > STEP_TOLERANCE.as_nanos()
    }

    /// HTTP/2: when the response's HEADERS frame was fully read.
    pub(crate) fn headers_read(&self) -> Option<Arrival> {
        self.lock().headers_read
    }

    /// HTTP/2: when the next DATA frame of the request was fully received, if known.
    pub(crate) fn pop_data_time(&self) -> Option<Arrival> {
        self.lock().data_times.pop_front()
    }

    /// `(sent, first_byte)` of the armed request.
    pub(crate) fn stamps(&self) -> (Option<Instant>, Option<Arrival>) {
        let s = self.lock();
        (s.last_write, s.first_read)
    }

    fn on_write(&self, bytes: &[u8], at: Instant) {
        let mut guard = self.lock();
        let s = &mut *guard;
        match &mut s.h2 {
            None => {
                if s.armed && s.first_read.is_none() {
                    s.last_write = Some(at);
                }
            }
            Some((w, _)) => {
                let mut ended = false;
                w.scan(bytes, |ev| {
                    if let Scan::Head(h) = ev
                        && h.stream != 0
                        && (h.kind == FRAME_HEADERS || h.kind == FRAME_DATA)
                        && h.flags & FLAG_END_STREAM != 0
                    {
                        ended = true;
                    }
                });
                if ended && s.armed && s.last_write.is_none() {
                    s.last_write = Some(at);
                }
            }
        }
    }

    fn on_read(&self, bytes: &[u8], user: Instant) {
        let mut guard = self.lock();
        let s = &mut *guard;
        let at = Arrival {
            user,
            // A kernel time cannot follow the user stamp of the same bytes;
            // past the pair's own error it means the real-time clock
            // stepped since the pair was taken, and the time is no time.
            kernel: s
                .raw_kernel
                .and_then(|k| (k <= user + STEP_TOLERANCE).then_some(k.min(user))),
            read: s.raw_reads,
        };
        s.last_read = Some(at);
        match &mut s.h2 {
            None => {
                if s.armed && s.first_read.is_none() {
                    s.first_read = Some(at);
                }
            }
            Some((_, r)) => {
                let mut stream_frame = false;
                let times = &mut s.data_times;
                let headers = &mut s.headers_read;
                let armed = s.armed;
                r.scan(bytes, |ev| match ev {
                    Scan::Head(h)
                        if h.stream != 0 && (h.kind == FRAME_HEADERS || h.kind == FRAME_DATA) =>
                    {
                        stream_frame = true;
                    }
                    Scan::End(h) if h.stream != 0 && h.kind == FRAME_DATA && h.len > 0 => {
                        times.push_back(at)
                    }
                    Scan::End(h)
                        if h.stream != 0
                            && h.kind == FRAME_HEADERS
                            && armed
                            && headers.is_none() =>
                    {
                        *headers = Some(at)
                    }
                    _ => {}
                });
                if stream_frame && s.armed && s.first_read.is_none() {
                    s.first_read = Some(at);
                }
            }
        }
    }
}

/// The plaintext stream with a [`Tap`] on every read and write.
pub(crate) struct TimedIo<S> {
    inner: S,
    tap: Tap,
}

impl<S> TimedIo<S> {
    pub(crate) fn new(inner: S, tap: Tap) -> TimedIo<S> {
        TimedIo { inner, tap }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for TimedIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let filled = &buf.filled()[before..];
            if !filled.is_empty() {
                // Stamp first: the time is taken as the bytes arrive.
                let at = Instant::now();
                self.tap.on_read(filled, at);
            }
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TimedIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r
            && n > 0
        {
            let at = Instant::now();
            self.tap.on_write(&buf[..n], at);
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r
            && n > 0
        {
            let at = Instant::now();
            let mut left = n;
            for b in bufs {
                if left == 0 {
                    break;
                }
                let take = left.min(b.len());
                self.tap.on_write(&b[..take], at);
                left -= take;
            }
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn heads(sc: &mut FrameScanner, bytes: &[u8], out: &mut Vec<FrameHead>) {
        sc.scan(bytes, |ev| {
            if let Scan::Head(h) = ev {
                out.push(h)
            }
        });
    }

    fn sample_stream() -> (Vec<u8>, Vec<FrameHead>) {
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        let frames = [
            (4u8, 0u8, 0u32, vec![0u8; 12]),
            (1, 4, 1, vec![7; 30]),
            (0, 1, 1, vec![9; 300]),
            (8, 0, 0, vec![0; 4]),
        ];
        let mut heads = Vec::new();
        for (k, f, s, p) in frames {
            bytes.extend(frame(k, f, s, &p));
            heads.push(FrameHead {
                kind: k,
                flags: f,
                stream: s,
                len: p.len(),
            });
        }
        (bytes, heads)
    }

    #[test]
    fn scanner_finds_every_frame_whole() {
        let (bytes, expected) = sample_stream();
        let mut sc = FrameScanner::new(H2_PREFACE_LEN);
        let mut seen = Vec::new();
        heads(&mut sc, &bytes, &mut seen);
        assert_eq!(seen, expected);
    }

    proptest! {
        #[test]
        fn scanner_is_split_invariant(cuts in proptest::collection::vec(0usize..400, 0..20)) {
            let (bytes, expected) = sample_stream();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % bytes.len()).collect();
            cuts.sort_unstable();
            let mut sc = FrameScanner::new(H2_PREFACE_LEN);
            let mut seen = Vec::new();
            let mut start = 0;
            for c in cuts.into_iter().chain(std::iter::once(bytes.len())) {
                heads(&mut sc, &bytes[start..c.max(start)], &mut seen);
                start = c.max(start);
            }
            prop_assert_eq!(seen, expected);
        }
    }

    #[test]
    fn h2_tap_ignores_control_frames() {
        let tap = Tap::default();
        tap.set_http2();
        tap.arm();
        let t0 = Instant::now();
        // Server SETTINGS on stream 0 must not count as the first byte.
        tap.on_read(&frame(4, 0, 0, &[0; 6]), t0);
        assert_eq!(tap.stamps().1, None);
        let (bytes, _) = sample_stream();
        let t1 = Instant::now();
        tap.on_write(&bytes, t1);
        assert_eq!(tap.stamps().0, Some(t1));
        let t2 = Instant::now();
        tap.on_read(&frame(1, 4, 1, &[0; 3]), t2);
        assert_eq!(tap.stamps().1.map(|a| a.user), Some(t2));
        // A DATA frame split over two reads is stamped when its last byte arrives.
        let data = frame(0, 0, 1, b"data: x\n\n");
        tap.on_read(&data[..12], Instant::now());
        assert_eq!(tap.pop_data_time(), None);
        let t3 = Instant::now();
        tap.on_read(&data[12..], t3);
        assert_eq!(tap.pop_data_time().map(|a| a.user), Some(t3));
    }

    #[test]
    fn h1_tap_keeps_last_write_before_first_read() {
        let tap = Tap::default();
        let t0 = Instant::now();
        tap.on_write(b"ignored before arm", t0);
        tap.arm();
        let t1 = Instant::now();
        tap.on_write(b"GET / HTTP/1.1\r\n", t1);
        let t2 = Instant::now();
        tap.on_write(b"\r\n", t2);
        let t3 = Instant::now();
        tap.on_read(b"HTTP/1.1 200 OK", t3);
        tap.on_write(b"late", Instant::now());
        let (sent, first) = tap.stamps();
        assert_eq!((sent, first.map(|a| a.user)), (Some(t2), Some(t3)));
        assert_eq!(first.and_then(|a| a.kernel), None);
    }

    #[test]
    fn reads_carry_the_kernel_time_of_the_latest_socket_read() {
        let tap = Tap::default();
        tap.arm();
        let clocks = tap.lock().clocks;
        // A socket read the kernel stamped 3 ms after the clock pair.
        let ns = clocks.real_ns_for_test() + 3_000_000;
        tap.on_raw_read(Some(ns));
        let user = Instant::now() + std::time::Duration::from_millis(10);
        tap.on_read(b"HTTP/1.1 200 OK\r\n", user);
        let a = tap.stamps().1.expect("first byte");
        assert_eq!(a.read, 1);
        assert_eq!(a.kernel, clocks.to_instant(ns));
        assert!(a.at() < a.user);
        // Plaintext yielded again without a new socket read (left over in
        // the TLS layer) keeps that read's kernel time.
        tap.on_read(b"more", user + std::time::Duration::from_millis(1));
        assert_eq!(
            tap.last_read().map(|a| (a.read, a.kernel)),
            Some((1, a.kernel))
        );
        // A kernel time later than the user stamp (a clock step) is no time.
        tap.on_raw_read(Some(ns + 60_000_000_000));
        let late = Instant::now();
        tap.on_read(b"x", late);
        assert_eq!(tap.last_read().map(|a| (a.read, a.kernel)), Some((2, None)));
        // A read without a kernel time has none.
        tap.on_raw_read(None);
        tap.on_read(b"y", Instant::now());
        assert_eq!(tap.last_read().map(|a| (a.read, a.kernel)), Some((3, None)));
    }

    #[test]
    fn a_step_of_the_real_time_clock_is_noticed() {
        let tap = Tap::default();
        tap.set_kernel(true);
        tap.arm();
        assert!(!tap.clock_stepped(), "no step yet");
        // The pair as if taken before the real-time clock moved 5 ms back.
        {
            let mut s = tap.lock();
            s.clocks = s.clocks.shifted_for_test(5_000_000);
        }
        assert!(tap.clock_stepped());
        // Without kernel stamps a step changes nothing.
        tap.set_kernel(false);
        assert!(!tap.clock_stepped());
    }
}
