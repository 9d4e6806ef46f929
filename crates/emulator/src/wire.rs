//! Wire-level truth: when a request reached the emulator's socket and when
//! a response's first content token left it.
//!
//! The truth log's `read_ms` and `first_token_ms` are the handler's own
//! moments: after hyper parsed the request, and when the body handed a
//! token to the connection. Under load (hundreds of requests arriving in
//! the same millisecond on one core) both lag the wire: the last request of
//! a burst is parsed milliseconds after its bytes arrived, and over HTTP/2
//! a handed token waits for the connection task to write it. A client
//! measures from the wire, so that lag is the server's, not the client's
//! error. [`WireStream`] wraps each accepted TCP socket (below TLS) and
//! keeps, per connection:
//! - the kernel's receive time of the latest read (`SO_TIMESTAMPNS` and
//!   `recvmsg(2)` on Linux; elsewhere, or when the option is refused, no
//!   time): the request's wire arrival is that of the read that completed
//!   it;
//! - the moment each write syscall that succeeded began: a token's wire
//!   departure is the first write that began after the token was handed.
//!   On loopback the kernel delivers the bytes to the peer's socket (and
//!   stamps them there) during that write.
//!
//! This is the emulator's own code, not the client's (`firsttoken-drive`'s
//! `kstamp` reads the same way): the truth a client is judged against
//! shares nothing with it but the kernel.
//!
//! Both are conservative for the client being judged: a later read on the
//! connection (an HTTP/2 window update) can only make the request's
//! arrival later, and a write of other data before the token's can only
//! make its departure earlier; either shortens the wire TTFT, so the
//! client's error against it is never understated.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// One connection's wire clock, shared by its socket and its requests.
#[derive(Debug, Default)]
pub struct Wire {
    state: Mutex<WireState>,
}

#[derive(Debug, Default)]
struct WireState {
    /// Kernel receive time of the latest read that carried one.
    last_read: Option<Instant>,
    /// Departures waiting for the next write.
    waiting: Vec<Departure>,
}

/// When some handed bytes left: set by the first write that began after
/// they were handed.
pub type Departure = Arc<OnceLock<Instant>>;

impl Wire {
    /// The kernel receive time of the latest read (`None`: none carried one).
    pub fn last_read(&self) -> Option<Instant> {
        self.state.lock().map_or(None, |s| s.last_read)
    }

    /// Bytes are being handed to the connection now: the returned cell is
    /// set when the next write begins.
    pub fn departure(&self) -> Departure {
        let d = Departure::default();
        if let Ok(mut s) = self.state.lock() {
            s.waiting.push(d.clone());
        }
        d
    }

    fn read_at(&self, at: Instant) {
        if let Ok(mut s) = self.state.lock() {
            s.last_read = Some(at);
        }
    }

    fn wrote(&self, began: Instant) {
        if let Ok(mut s) = self.state.lock() {
            for d in s.waiting.drain(..) {
                let _ = d.set(began);
            }
        }
    }
}

/// Keep the kernel's receive timestamping on for the whole process: Linux
/// turns it on lazily when the first socket asks, so packets in the moments
/// after that carry no time. One idle UDP socket that asks, opened when
/// the server starts and never closed, keeps it on.
pub(crate) fn keep_timestamps_on() {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::socket::{setsockopt, sockopt::ReceiveTimestampns};
        static KEEPER: OnceLock<Option<std::net::UdpSocket>> = OnceLock::new();
        KEEPER.get_or_init(|| {
            let s = std::net::UdpSocket::bind("127.0.0.1:0").ok()?;
            setsockopt(&s, ReceiveTimestampns, &true).ok()?;
            Some(s)
        });
    }
}

/// An accepted TCP socket that tells its [`Wire`] when data arrived and
/// when writes began.
pub struct WireStream {
    tcp: TcpStream,
    wire: Arc<Wire>,
    /// Control-message buffer; `None` when kernel timestamps are off.
    #[cfg(target_os = "linux")]
    cmsg: Option<Vec<u8>>,
}

impl WireStream {
    /// Wrap `tcp`, asking the kernel for receive timestamps.
    pub fn new(tcp: TcpStream, wire: Arc<Wire>) -> WireStream {
        #[cfg(target_os = "linux")]
        {
            use nix::sys::socket::{setsockopt, sockopt::ReceiveTimestampns};
            let on = setsockopt(&tcp, ReceiveTimestampns, &true).is_ok();
            let cmsg = on.then(|| nix::cmsg_space!(nix::sys::time::TimeSpec));
            WireStream { tcp, wire, cmsg }
        }
        #[cfg(not(target_os = "linux"))]
        WireStream { tcp, wire }
    }

    /// One `recvmsg` into `buf`'s unfilled part; `None` when timestamps are off.
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
        let fd = self.tcp.as_raw_fd();
        loop {
            match self.tcp.poll_read_ready(cx) {
                Poll::Pending => return Some(Poll::Pending),
                Poll::Ready(Err(e)) => return Some(Poll::Ready(Err(e))),
                Poll::Ready(Ok(())) => {}
            }
            let dst = buf.initialize_unfilled();
            let got = self.tcp.try_io(Interest::READABLE, || {
                let mut iov = [io::IoSliceMut::new(dst)];
                let msg = recvmsg::<()>(fd, &mut iov, Some(cmsg.as_mut_slice()), MsgFlags::empty())
                    .map_err(io::Error::from)?;
                let stamp = msg.cmsgs().ok().and_then(|mut c| {
                    c.find_map(|m| match m {
                        ControlMessageOwned::ScmTimestampns(ts) => {
                            Some(i128::from(ts.tv_sec()) * 1_000_000_000 + i128::from(ts.tv_nsec()))
                        }
                        _ => None,
                    })
                });
                Ok((msg.bytes, stamp))
            });
            match got {
                Ok((n, stamp)) => {
                    buf.advance(n);
                    if let Some(at) = stamp.filter(|_| n > 0).and_then(on_monotonic) {
                        self.wire.read_at(at);
                    }
                    return Some(Poll::Ready(Ok(())));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Some(Poll::Ready(Err(e))),
            }
        }
    }
}

/// A real-time stamp (ns since the epoch) on the monotonic clock, through a
/// pair of readings taken now (the two clocks tick at the same rate).
fn on_monotonic(real_ns: i128) -> Option<Instant> {
    let mono = Instant::now();
    let now_ns = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?
        .as_nanos() as i128;
    let ago = u64::try_from(now_ns - real_ns).unwrap_or(0);
    mono.checked_sub(std::time::Duration::from_nanos(ago))
}

impl AsyncRead for WireStream {
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
        Pin::new(&mut this.tcp).poll_read(cx, buf)
    }
}

impl WireStream {
    /// Run one write, telling the wire when a successful one began.
    fn stamped(
        &mut self,
        write: impl FnOnce(Pin<&mut TcpStream>) -> Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        let began = Instant::now();
        let r = write(Pin::new(&mut self.tcp));
        if let Poll::Ready(Ok(n)) = r
            && n > 0
        {
            self.wire.wrote(began);
        }
        r
    }
}

impl AsyncWrite for WireStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().stamped(|t| t.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().stamped(|t| t.poll_write_vectored(cx, bufs))
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
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn pair() -> (TcpStream, WireStream, Arc<Wire>) {
        keep_timestamps_on();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, server) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let wire = Arc::new(Wire::default());
        let ws = WireStream::new(server.unwrap().0, wire.clone());
        // The kernel turns stamping on lazily: give it a moment.
        tokio::time::sleep(Duration::from_millis(20)).await;
        (client.unwrap(), ws, wire)
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_late_read_is_stamped_when_the_request_arrived() {
        let (mut client, mut ws, wire) = pair().await;
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let sent = Instant::now();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut buf = [0u8; 64];
        let n = ws.read(&mut buf).await.unwrap();
        let read = Instant::now();
        assert_eq!(&buf[..n], b"GET / HTTP/1.1\r\n\r\n");
        let arrived = wire.last_read().expect("a kernel receive time");
        // The arrival, not the read 30 ms later.
        assert!(read.saturating_duration_since(arrived) >= Duration::from_millis(25));
        let off = if arrived > sent {
            arrived - sent
        } else {
            sent - arrived
        };
        assert!(off < Duration::from_millis(5), "{off:?}");
    }

    #[tokio::test]
    async fn a_departure_is_the_next_write_not_the_handing() {
        let (mut client, mut ws, wire) = pair().await;
        let handed = Instant::now();
        let d = wire.departure();
        assert!(d.get().is_none(), "no write yet");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let before = Instant::now();
        ws.write_all(b"data: token\n\n").await.unwrap();
        let left = *d.get().expect("the write set the departure");
        assert!(left >= before && left - handed >= Duration::from_millis(20));
        // A cell handed after that write waits for the next one.
        let later = wire.departure();
        assert!(later.get().is_none());
        let mut buf = [0u8; 32];
        let n = client.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"data: token\n\n");
    }
}
