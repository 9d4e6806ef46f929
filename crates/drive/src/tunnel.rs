//! A `CONNECT` tunnel through a forward HTTP proxy: the request, the
//! proxy's answer, and what a refusal means to a person.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use firsttoken_plan::{Proxy, Target};
use firsttoken_record::ErrorKind;

use crate::Failure;

/// Longest proxy answer head read before giving up.
const MAX_HEAD: usize = 16 * 1024;

/// Ask `proxy` (already connected on `tcp`) for a tunnel to `target`.
/// Returns once the proxy answered 2xx; the stream then carries the
/// target's bytes.
pub(crate) async fn open(
    tcp: &mut TcpStream,
    proxy: &Proxy,
    target: &Target,
) -> Result<(), Failure> {
    let host = if target.host.contains(':') {
        format!("[{}]", target.host)
    } else {
        target.host.clone()
    };
    let authority = format!("{host}:{}", target.port);
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(auth) = proxy.authorization() {
        head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    head.push_str("\r\n");
    let broke = |what: &str, e: std::io::Error| {
        Failure::new(
            ErrorKind::Connect,
            format!("the proxy {} {what}: {e}", proxy.masked()),
        )
    };
    tcp.write_all(head.as_bytes())
        .await
        .map_err(|e| broke("closed before CONNECT was sent", e))?;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    let end = loop {
        let n = tcp
            .read(&mut chunk)
            .await
            .map_err(|e| broke("failed while answering CONNECT", e))?;
        if n == 0 {
            return Err(Failure::new(
                ErrorKind::Connect,
                format!(
                    "the proxy {} closed the connection without answering CONNECT {authority}",
                    proxy.masked()
                ),
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(Failure::new(
                ErrorKind::Connect,
                format!(
                    "the proxy {}'s answer to CONNECT is longer than {MAX_HEAD} bytes without ending",
                    proxy.masked()
                ),
            ));
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut res = httparse::Response::new(&mut headers);
    let status = match res.parse(&buf[..end]) {
        Ok(httparse::Status::Complete(_)) => res.code.unwrap_or(0),
        _ => {
            return Err(Failure::new(
                ErrorKind::Connect,
                format!(
                    "the proxy {} answered CONNECT with something that is not HTTP: {:?}",
                    proxy.masked(),
                    String::from_utf8_lossy(&buf[..end.min(80)])
                ),
            ));
        }
    };
    if !(200..300).contains(&status) {
        let reason = res.reason.unwrap_or_default();
        let hint = match status {
            407 if proxy.authorization().is_none() => {
                " (it wants credentials: put them in the proxy URL, http://user:password@host:port)"
            }
            407 => " (it refused the credentials in the proxy URL)",
            403 => " (its rules forbid this destination or port)",
            _ => "",
        };
        return Err(Failure::new(
            ErrorKind::Connect,
            format!(
                "the proxy {} answered CONNECT {authority} with {status} {reason}{hint}",
                proxy.masked()
            ),
        ));
    }
    if end < buf.len() {
        return Err(Failure::new(
            ErrorKind::Connect,
            format!(
                "the proxy {} sent {} bytes after its CONNECT answer, before the tunnel was used",
                proxy.masked(),
                buf.len() - end
            ),
        ));
    }
    Ok(())
}
