//! A real compressor in front of a streaming origin (issue 9, part 4):
//! Debian's nginx with `gzip on; gzip_types text/event-stream;` proxying
//! the emulator, started by the test on a free loopback port with its own
//! prefix and config, in the foreground. Two locations show what a
//! compressing proxy does to first-token time: with `proxy_buffering off`
//! nginx flushes its gzip stream on every upstream chunk (tokens arrive as
//! the origin sends them); with buffering on, the compressor holds the
//! stream and every token arrives at the end, together.
//!
//! Skipped, loudly, when nginx is not installed (`.ci/run` installs it).

mod common;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use firsttoken_emulator::Settings;
use firsttoken_record::Sample;

/// The origin: first token after 100 ms, then one every 50 ms, 8 in all.
fn settings() -> Settings {
    Settings {
        ttft: Duration::from_millis(100),
        itl: Duration::from_millis(50),
        tokens: 8,
        ..Default::default()
    }
}

fn nginx_binary() -> Option<PathBuf> {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// nginx running in the foreground until dropped.
struct Nginx {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn config(dir: &Path, port: u16, origin: SocketAddr) -> String {
    let d = dir.display();
    format!(
        r#"daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    gzip on;
    gzip_types text/event-stream;
    gzip_proxied any;
    gzip_min_length 0;
    gzip_buffers 16 8k;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    server {{
        listen 127.0.0.1:{port};
        location /streaming/ {{
            proxy_pass http://{origin}/;
            proxy_buffering off;
        }}
        location /buffered/ {{
            proxy_pass http://{origin}/;
            proxy_buffering on;
            proxy_buffers 8 64k;
        }}
    }}
}}
"#
    )
}

/// Start nginx in front of `origin`; `None` when nginx is not installed.
fn start_nginx(origin: SocketAddr) -> Option<Nginx> {
    let Some(bin) = nginx_binary() else {
        eprintln!(
            "SKIPPED: nginx is not installed (apt-get install nginx); the compressing-proxy test did not run"
        );
        return None;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let conf = dir.path().join("nginx.conf");
    std::fs::write(&conf, config(dir.path(), port, origin)).expect("write nginx.conf");
    let child = Command::new(bin)
        .arg("-p")
        .arg(dir.path())
        .arg("-c")
        .arg(&conf)
        .arg("-e")
        .arg(dir.path().join("error.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start nginx");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let nginx = Nginx {
        child,
        addr,
        _dir: dir,
    };
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            Instant::now() < until,
            "nginx did not listen on {addr} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(nginx)
}

async fn one(url: &str, compressed: bool) -> Sample {
    let mut s = spec(url);
    s.compressed = compressed;
    let mut samples = probe(s).await;
    let s = samples.remove(0);
    assert_ok(&s);
    assert_phase_order(&s);
    assert_eq!(s.output_tokens, Some(8), "{s:#?}");
    s
}

fn spread(s: &Sample) -> f64 {
    s.last_token_ms.unwrap() - s.ttft_ms.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_through_nginx_keeps_wire_stamps_and_shows_a_buffering_compressor() {
    let emu = emulator(settings(), None).await;
    let Some(nginx) = start_nginx(emu.addr) else {
        return;
    };
    let base = format!("http://{}", nginx.addr);

    // Streaming gzip: nginx flushes its deflate stream on every upstream
    // chunk, so each token is decoded when its compressed bytes arrive.
    let s = one(&format!("{base}/streaming/v1/chat/completions"), true).await;
    assert_eq!(s.content_encoding.as_deref(), Some("gzip"), "{s:#?}");
    assert!(
        s.ttft_ms.unwrap() >= 100.0 && s.ttft_ms.unwrap() < 300.0,
        "the first token as the origin sent it: {s:#?}"
    );
    assert!(
        spread(&s) >= 250.0,
        "tokens 50 ms apart at the origin stay apart: {s:#?}"
    );
    assert!(s.content_chunks >= 4, "{s:#?}");

    // The same location without --compressed: nginx does not compress.
    let plain = one(&format!("{base}/streaming/v1/chat/completions"), false).await;
    assert_eq!(plain.content_encoding, None, "{plain:#?}");

    // Buffering in front of the compressor: the stream is held and every
    // token arrives at the end (nginx holds the response headers too, so
    // here ttfb is late as well). The first token comes ~the whole stream
    // later than the origin sent it.
    let b = one(&format!("{base}/buffered/v1/chat/completions"), true).await;
    assert_eq!(b.content_encoding.as_deref(), Some("gzip"), "{b:#?}");
    assert!(
        b.ttft_ms.unwrap() >= 400.0,
        "the first token waits for the whole stream (origin: 100 ms + 7 × 50 ms): {b:#?}"
    );
    assert!(spread(&b) < 50.0, "buffered tokens arrive together: {b:#?}");
    assert!(b.ttfb_ms.unwrap() <= b.ttft_ms.unwrap(), "{b:#?}");
    eprintln!(
        "nginx gzip: streaming ttfb {:.1} ttft {:.1} last {:.1} ms; buffered ttfb {:.1} ttft {:.1} last {:.1} ms",
        s.ttfb_ms.unwrap(),
        s.ttft_ms.unwrap(),
        s.last_token_ms.unwrap(),
        b.ttfb_ms.unwrap(),
        b.ttft_ms.unwrap(),
        b.last_token_ms.unwrap()
    );
}
