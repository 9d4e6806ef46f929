//! Kernel receive timestamps, below TLS.
//!
//! [`RecvStream`] wraps the TCP socket. On Linux it turns on `SO_TIMESTAMPNS`
//! and reads with `recvmsg(2)`, whose `SCM_TIMESTAMPNS` control message
//! carries the time the kernel received the data just read (for TCP: the
//! *last* segment that read copied, see docs/METHODOLOGY.md). Each read
//! tells the connection's [`Tap`] its kernel time, so the plaintext tap
//! above (TLS or not) can stamp the bytes it yields with the kernel time of
//! the read that completed them, as well as with its own user-space clock.
//!
//! The kernel stamps on `CLOCK_REALTIME`; the rest of the client measures on
//! `Instant` (`CLOCK_MONOTONIC`). [`ClockPair`] converts: it reads the
//! monotonic clock, the real-time clock and the monotonic clock again,
//! keeps the pair with the shortest bracket, and maps a real-time stamp to
//! `monotonic_mid + (stamp − realtime)`. Both clocks tick at the same
//! (NTP-slewed) rate, so the only errors are half the bracket (tens of
//! nanoseconds) and a step of the real-time clock between the pair and the
//! stamp; the pair is taken again for every request to bound the latter,
//! and read again when the response ends: a request during which the
//! real-time clock stepped keeps its user-space stamps (`clock: "user"`).
//!
//! Where the option is refused or the OS is not Linux, reads go through
//! the ordinary path and carry no kernel time: samples then say
//! `clock: "user"`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::tap::Tap;

/// A simultaneous reading of the monotonic and the real-time clocks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClockPair {
    mono: Instant,
    /// Nanoseconds since the Unix epoch on the real-time clock.
    real_ns: i128,
}

impl ClockPair {
    /// The best of three brackets `Instant → SystemTime → Instant`.
    pub(crate) fn now() -> ClockPair {
        let mut best: Option<(Duration, ClockPair)> = None;
        for _ in 0..3 {
            let a = Instant::now();
            let real = SystemTime::now();
            let b = Instant::now();
            let width = b.saturating_duration_since(a);
            let real_ns = match real.duration_since(SystemTime::UNIX_EPOCH) {
                Ok(d) => d.as_nanos() as i128,
                Err(e) => -(e.duration().as_nanos() as i128),
            };
            let pair = ClockPair {
                mono: a + width / 2,
                real_ns,
            };
            if best.is_none_or(|(w, _)| width < w) {
                best = Some((width, pair));
            }
        }
        // Three iterations always ran; the fallback is never taken.
        best.map_or(
            ClockPair {
                mono: Instant::now(),
                real_ns: 0,
            },
            |(_, p)| p,
        )
    }

    /// The real-time side of the pair (ns since the epoch).
    #[cfg(test)]
    pub(crate) fn real_ns_for_test(self) -> i128 {
        self.real_ns
    }

    /// How far the real-time clock moved against the monotonic one from
    /// this pair to `later` (ns; positive: forward). Zero but for the two
    /// pairs' own errors unless the real-time clock was stepped.
    pub(crate) fn step_ns(self, later: ClockPair) -> i128 {
        let mono = if later.mono >= self.mono {
            (later.mono - self.mono).as_nanos() as i128
        } else {
            -((self.mono - later.mono).as_nanos() as i128)
        };
        (later.real_ns - self.real_ns) - mono
    }

    /// The same pair with its real-time side `ns` later.
    #[cfg(test)]
    pub(crate) fn shifted_for_test(self, ns: i128) -> ClockPair {
        ClockPair {
            real_ns: self.real_ns + ns,
            ..self
        }
    }

    /// A real-time stamp (ns since the epoch) on the monotonic clock;
    /// `None` when it falls before the process's clock can express it.
    pub(crate) fn to_instant(self, real_ns: i128) -> Option<Instant> {
        let delta = real_ns - self.real_ns;
        let abs = Duration::from_nanos(u64::try_from(delta.unsigned_abs()).ok()?);
        if delta >= 0 {
            self.mono.checked_add(abs)
        } else {
            self.mono.checked_sub(abs)
        }
    }
}

/// Keep the kernel's receive timestamping on for the whole process.
///
/// Linux stamps packets only while some socket asks for timestamps, and
/// it turns stamping on *lazily* (a static branch flipped from a work
/// queue) when the first socket asks: packets arriving in the moments
/// after that carry no time, and a read of them gets no control message.
/// One idle UDP socket with `SO_TIMESTAMPNS` on, opened once (by
/// [`crate::connect::Connector::new`], long before the first timed
/// connection) and never closed, keeps stamping on, so the first request
/// of a run is stamped like the others.
pub(crate) fn keep_timestamps_on() {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::socket::{setsockopt, sockopt::ReceiveTimestampns};
        static KEEPER: std::sync::OnceLock<Option<std::net::UdpSocket>> =
            std::sync::OnceLock::new();
        KEEPER.get_or_init(|| {
            let s = std::net::UdpSocket::bind("127.0.0.1:0").ok()?;
            setsockopt(&s, ReceiveTimestampns, &true).ok()?;
            Some(s)
        });
    }
}

/// The TCP socket under TLS and HTTP, reading with kernel receive
/// timestamps when it can.
pub(crate) struct RecvStream {
    tcp: TcpStream,
    tap: Tap,
    /// The control-message buffer, allocated once; `None` when timestamps are off.
    #[cfg(target_os = "linux")]
    cmsg: Option<Vec<u8>>,
}

/// Size of the scratch buffer (the most one read returns when the caller's
/// buffer is uninitialized).
#[cfg(target_os = "linux")]
const SCRATCH_BYTES: usize = 16 * 1024;

#[cfg(target_os = "linux")]
thread_local! {
    /// An initialized buffer for callers that pass uninitialized memory
    /// (hyper's HTTP/1.1 reads, h2's): `recvmsg` needs initialized bytes,
    /// and zeroing the caller's 8–16 KiB before every read costs more than
    /// copying the few hundred bytes a token read returns. What a read puts
    /// here is copied out before the read returns, so one buffer per thread
    /// serves every connection (one per connection was 16 MB at 1,024
    /// plaintext streams).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl RecvStream {
    /// Wrap `tcp`, turning kernel receive timestamps on unless `kernel` is
    /// false; every read is reported to `tap`.
    pub(crate) fn new(tcp: TcpStream, tap: Tap, kernel: bool) -> RecvStream {
        #[cfg(target_os = "linux")]
        {
            use nix::sys::socket::{setsockopt, sockopt::ReceiveTimestampns};
            if kernel {
                keep_timestamps_on();
            }
            let on = kernel && setsockopt(&tcp, ReceiveTimestampns, &true).is_ok();
            let cmsg = on.then(|| nix::cmsg_space!(nix::sys::time::TimeSpec));
            tap.set_kernel(on);
            RecvStream { tcp, tap, cmsg }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = kernel;
            tap.set_kernel(false);
            RecvStream { tcp, tap }
        }
    }

    /// One `recvmsg` into `buf`: the byte count and the kernel's receive
    /// time (ns since the epoch), when the control message carried one.
    #[cfg(target_os = "linux")]
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Option<Poll<io::Result<()>>> {
        use std::os::fd::AsRawFd;

        use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
        use tokio::io::Interest;

        let cmsg = self.cmsg.as_mut()?;
        let tcp = &self.tcp;
        let fd = tcp.as_raw_fd();
        // One `recvmsg` into `dst`: the byte count and the kernel's stamp.
        // A read shorter than the buffer drained the socket: as tokio's own
        // `poll_read` does, its readiness is cleared now (the closure says
        // WouldBlock, its result kept aside), so the next read waits for the
        // next arrival instead of costing a `recvmsg` that fails.
        let mut recv = |dst: &mut [u8]| -> io::Result<(usize, Option<i128>)> {
            let len = dst.len();
            let mut short = None;
            let got = tcp.try_io(Interest::READABLE, || {
                let mut iov = [io::IoSliceMut::new(dst)];
                let msg = recvmsg::<()>(fd, &mut iov, Some(cmsg.as_mut_slice()), MsgFlags::empty())
                    .map_err(io::Error::from)?;
                let mut stamp = None;
                // A truncated control message (no room) only loses the stamp.
                if let Ok(cmsgs) = msg.cmsgs() {
                    for c in cmsgs {
                        if let ControlMessageOwned::ScmTimestampns(ts) = c {
                            stamp = Some(
                                i128::from(ts.tv_sec()) * 1_000_000_000 + i128::from(ts.tv_nsec()),
                            );
                        }
                    }
                }
                if msg.bytes > 0 && msg.bytes < len {
                    short = Some((msg.bytes, stamp));
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok((msg.bytes, stamp))
            });
            match (got, short) {
                (Err(_), Some(read)) => Ok(read),
                (got, _) => got,
            }
        };
        loop {
            match tcp.poll_read_ready(cx) {
                Poll::Pending => return Some(Poll::Pending),
                Poll::Ready(Err(e)) => return Some(Poll::Ready(Err(e))),
                Poll::Ready(Ok(())) => {}
            }
            // Read in place when the caller's buffer is initialized (TLS),
            // else into the thread's scratch buffer and copy what arrived.
            let in_place = buf.initialized().len() - buf.filled().len() >= buf.remaining();
            let got = if in_place {
                recv(buf.initialize_unfilled()).inspect(|&(n, _)| buf.advance(n))
            } else {
                SCRATCH.with_borrow_mut(|scratch| {
                    if scratch.is_empty() {
                        scratch.resize(SCRATCH_BYTES, 0);
                    }
                    let n = buf.remaining().min(SCRATCH_BYTES);
                    recv(&mut scratch[..n]).inspect(|&(got, _)| buf.put_slice(&scratch[..got]))
                })
            };
            match got {
                Ok((n, stamp)) => {
                    if n > 0 {
                        self.tap.on_raw_read(stamp);
                    }
                    return Some(Poll::Ready(Ok(())));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Some(Poll::Ready(Err(e))),
            }
        }
    }
}

impl AsyncRead for RecvStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        #[cfg(target_os = "linux")]
        if let Some(r) = this.poll_recv(cx, buf) {
            return r;
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut this.tcp).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r
            && buf.filled().len() > before
        {
            this.tap.on_raw_read(None);
        }
        r
    }
}

impl AsyncWrite for RecvStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_pair_maps_the_real_time_clock_onto_instants() {
        let pair = ClockPair::now();
        let later = ClockPair::now();
        // The second pair's real-time reading, mapped through the first,
        // lands within a millisecond of its own monotonic reading.
        let mapped = pair.to_instant(later.real_ns).expect("representable");
        let off = if mapped > later.mono {
            mapped - later.mono
        } else {
            later.mono - mapped
        };
        assert!(off < Duration::from_millis(1), "{off:?}");
        let back = pair
            .to_instant(pair.real_ns - 5_000_000)
            .expect("representable");
        assert_eq!(pair.mono - back, Duration::from_millis(5));
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_late_read_is_stamped_when_the_data_arrived() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, server) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let (mut server, _) = server.unwrap();
        let tap = Tap::default();
        let mut rs = RecvStream::new(client.unwrap(), tap.clone(), true);
        assert!(tap.kernel(), "SO_TIMESTAMPNS was refused on loopback");
        // The first socket of a process to ask turns stamping on lazily
        // (see keep_timestamps_on): give the kernel a moment.
        tokio::time::sleep(Duration::from_millis(20)).await;
        tap.arm();
        server.write_all(b"hello").await.unwrap();
        let written = Instant::now();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut buf = [0u8; 16];
        let n = rs.read(&mut buf).await.unwrap();
        let read = Instant::now();
        assert_eq!(&buf[..n], b"hello");
        let k = tap.raw_kernel().expect("a kernel stamp");
        // Stamped near the write, not 30 ms later at the read.
        assert!(k <= read);
        assert!(read.saturating_duration_since(k) >= Duration::from_millis(25));
        let off = if k > written {
            k - written
        } else {
            written - k
        };
        assert!(off < Duration::from_millis(5), "{off:?}");
    }
}
