//! Real third-party components on loopback for the CLI tests: Debian's
//! nginx as a TLS 1.3 + HTTP/2 edge, a throwaway PKI made by the `openssl`
//! command (an RSA-2048 leaf, as most deployments still serve), and curl as
//! the phase-timing reference.
//!
//! `.ci/run` installs nginx, openssl and curl; outside CI a test without
//! them says loudly that it was skipped. Under CI (`CI` set) a missing tool
//! fails the test instead, so nothing is skipped silently there.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// True when `tool` runs; otherwise prints why the test is skipped (or
/// panics under CI, where every tool must be installed).
pub fn have(tool: &str, test: &str) -> bool {
    let found = Command::new(tool)
        .arg(if tool == "nginx" { "-v" } else { "--version" })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        if std::env::var_os("CI").is_some() {
            panic!("{test}: `{tool}` is not installed; .ci/run installs it");
        }
        eprintln!(
            "SKIPPED {test}: `{tool}` is not installed (Debian package; .ci/run installs it)"
        );
    }
    found
}

/// A CA and a leaf for `localhost` and 127.0.0.1 signed by it, as PEM files.
pub struct Pki {
    pub ca: PathBuf,
    pub leaf: PathBuf,
    pub key: PathBuf,
}

/// Make a throwaway PKI in `dir` with the `openssl` command.
pub fn openssl_pki(dir: &Path) -> Pki {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=firsttoken test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write the leaf extensions");
    run(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
    Pki {
        ca: dir.join("ca.pem"),
        leaf: dir.join("leaf.pem"),
        key: dir.join("leaf.key"),
    }
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free port")
        .port()
}

/// Wait until `addr` accepts connections.
pub fn wait_listening(addr: SocketAddr, within: Duration) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// nginx in the foreground with its own prefix, killed when dropped.
pub struct Nginx {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl Nginx {
    /// nginx serving TLS 1.3 and HTTP/2 on 127.0.0.1 with `pki`, proxying
    /// every request to `upstream` (`http://HOST:PORT`) unbuffered, as an
    /// SSE edge must, over kept-alive upstream connections, as production
    /// edges do. `extra` is added to the `server` block.
    pub fn tls_edge(dir: &Path, pki: &Pki, upstream: &str, extra: &str) -> Nginx {
        let origin = upstream.trim_end_matches('/').trim_start_matches("http://");
        let body = format!(
            "upstream origin {{ server {origin}; keepalive 16; }}
  server {{
    listen 127.0.0.1:{{port}} ssl http2;
    ssl_certificate {leaf};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.3;
    location / {{
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_buffering off;
    }}
    {extra}
  }}",
            leaf = pki.leaf.display(),
            key = pki.key.display(),
        );
        Nginx::start(dir, &body)
    }

    /// nginx with `http` block contents (one `server` listening on
    /// `{port}`, filled with a free port; upstreams). A port taken between
    /// choosing and binding is retried.
    pub fn start(dir: &Path, http: &str) -> Nginx {
        for attempt in 0..3 {
            let port = free_port();
            let conf = dir.join("nginx.conf");
            let d = dir.display();
            std::fs::write(
                &conf,
                format!(
                    "daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  {}
}}
",
                    http.replace("{port}", &port.to_string())
                ),
            )
            .expect("write nginx.conf");
            let child = Command::new("nginx")
                .arg("-c")
                .arg(&conf)
                .arg("-e")
                .arg(dir.join("error.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start nginx");
            let mut n = Nginx {
                child,
                port,
                dir: dir.to_path_buf(),
            };
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            if wait_listening(addr, Duration::from_secs(10)) {
                return n;
            }
            let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
            let _ = n.child.kill();
            let _ = n.child.wait();
            if attempt == 2 {
                panic!("nginx did not start listening on {addr}:\n{log}");
            }
        }
        unreachable!()
    }

    /// `https://localhost:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    /// The `--resolve` argument that sends `localhost:PORT` to 127.0.0.1.
    pub fn resolve(&self) -> String {
        format!("localhost:{}:127.0.0.1", self.port)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// curl's handshake time, in ms, for `n` transfers in one curl process:
/// HTTP/1.1 with `Connection: close` and no session-id cache, so each
/// transfer opens a new connection and pays a full handshake, while the
/// process's own one-time initialisation is paid once. Each value is
/// `time_appconnect − time_connect`.
pub fn curl_handshakes_ms(url: &str, resolve: &str, ca: &Path, body: &str, n: usize) -> Vec<f64> {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "--http1.1", "--no-sessionid", "--max-time", "30"])
        .arg("--cacert")
        .arg(ca)
        .args(["--resolve", resolve])
        .args([
            "-H",
            "Connection: close",
            "-H",
            "content-type: application/json",
        ])
        .args(["-d", body])
        .args([
            "-w",
            "%{time_connect} %{time_appconnect} %{num_connects}\\n",
        ]);
    for _ in 0..n {
        cmd.args(["-o", "/dev/null", url]);
    }
    let out = cmd.output().expect("curl runs");
    assert!(out.status.success(), "curl failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<f64> = text
        .lines()
        .map(|l| {
            let v: Vec<f64> = l
                .split_whitespace()
                .map(|x| x.parse().expect("curl -w prints numbers"))
                .collect();
            assert_eq!(
                v[2], 1.0,
                "each curl transfer opens its own connection: {text}"
            );
            (v[1] - v[0]) * 1000.0
        })
        .collect();
    assert_eq!(rows.len(), n, "{text}");
    rows
}

/// The median of `v`.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// tinyproxy in the foreground on 127.0.0.1, killed when dropped.
pub struct Tinyproxy {
    child: Child,
    pub port: u16,
    log: PathBuf,
}

impl Tinyproxy {
    /// Start it in `dir`, asking for Basic credentials when `auth` is given.
    pub fn start(dir: &Path, auth: Option<(&str, &str)>) -> Tinyproxy {
        for attempt in 0..3 {
            let port = free_port();
            let log = dir.join(format!("tinyproxy-{port}.log"));
            let conf = dir.join(format!("tinyproxy-{port}.conf"));
            let mut text = format!(
                "Port {port}\nListen 127.0.0.1\nTimeout 30\nAllow 127.0.0.1\nMaxClients 32\n\
                 LogFile \"{}\"\nLogLevel Connect\nPidFile \"{}\"\nDisableViaHeader Yes\n",
                log.display(),
                dir.join(format!("tinyproxy-{port}.pid")).display()
            );
            if let Some((user, password)) = auth {
                text.push_str(&format!("BasicAuth {user} {password}\n"));
            }
            std::fs::write(&conf, text).expect("write the tinyproxy config");
            let child = Command::new("tinyproxy")
                .arg("-d")
                .arg("-c")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start tinyproxy");
            let mut t = Tinyproxy { child, port, log };
            if wait_listening(
                SocketAddr::from(([127, 0, 0, 1], port)),
                Duration::from_secs(10),
            ) {
                return t;
            }
            let _ = t.child.kill();
            let _ = t.child.wait();
            if attempt == 2 {
                panic!(
                    "tinyproxy did not start on port {port}: {}",
                    std::fs::read_to_string(&t.log).unwrap_or_default()
                );
            }
        }
        unreachable!()
    }

    /// `http://127.0.0.1:PORT`, with `user:password@` when given.
    pub fn url(&self, auth: Option<(&str, &str)>) -> String {
        match auth {
            Some((u, p)) => format!("http://{u}:{p}@127.0.0.1:{}", self.port),
            None => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
