//! Starting Chromium and making sure it ends: its own process group (every
//! helper process Chromium forks is in it), killed as a group when the
//! [`Chromium`] is dropped (also on Ctrl-C, an error or a panic, since the
//! caller drops it while unwinding), and, where util-linux's `setpriv` is
//! installed, a parent-death signal so a `kill -9` of firsttoken ends it too.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::BrowseError;

/// Where `setpriv` (util-linux) usually lives.
const SETPRIV: &str = "/usr/bin/setpriv";

/// A running headless Chromium, its DevTools WebSocket address, and the
/// temporary profile it uses; all of it goes away on drop.
pub(crate) struct Chromium {
    child: Child,
    pgid: Option<nix::unistd::Pid>,
    /// The DevTools WebSocket URL Chromium printed.
    pub(crate) ws_url: String,
    // Dropped after the kill (fields drop in order): the profile directory.
    _profile: tempfile::TempDir,
}

/// The flags that keep Chromium quiet and local: no first-run UI, no
/// background networking (updates, sync, safe browsing, metrics, field
/// trials), no proxy, and a host resolver that resolves only the hosts
/// the measurement needs.
pub(crate) fn flags(allowed_hosts: &[String]) -> Vec<String> {
    let mut rules = String::from("MAP * ~NOTFOUND");
    for h in allowed_hosts {
        rules.push_str(", EXCLUDE ");
        rules.push_str(h);
    }
    let mut f: Vec<String> = [
        "--headless",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--metrics-recording-only",
        "--safebrowsing-disable-auto-update",
        "--password-store=basic",
        "--use-mock-keychain",
        "--no-proxy-server",
        "--no-pings",
        "--mute-audio",
        "--hide-scrollbars",
        "--disable-renderer-backgrounding",
        "--disable-background-timer-throttling",
        "--disable-backgrounding-occluded-windows",
        // Frames when there is something to draw, not on a 60 Hz tick:
        // the painted stamp is then the first frame that can show the
        // text, not that frame plus the wait for a virtual display's vsync.
        "--disable-frame-rate-limit",
        "--disable-gpu-vsync",
        "--disable-features=Translate,OptimizationHints,OptimizationGuideModelDownloading,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions,HttpsUpgrades,PrivacySandboxSettings4,NetworkTimeServiceQuerying,SafeBrowsingAsyncRealTimeCheck",
        "--remote-debugging-port=0",
        "--remote-debugging-address=127.0.0.1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    f.push(format!("--host-resolver-rules={rules}"));
    if nix::unistd::geteuid().is_root() {
        // Chromium's sandbox refuses to run as root.
        f.push("--no-sandbox".into());
    }
    f
}

impl Chromium {
    /// Start `executable` headless on a fresh profile and wait (at most
    /// `timeout`) for its DevTools address.
    pub(crate) async fn start(
        executable: &Path,
        allowed_hosts: &[String],
        timeout: Duration,
    ) -> Result<Chromium, BrowseError> {
        let profile = tempfile::Builder::new()
            .prefix("firsttoken-chromium-")
            .tempdir()
            .map_err(|e| BrowseError::Launch {
                executable: executable.to_path_buf(),
                message: format!("temporary profile: {e}"),
            })?;
        let mut cmd = if Path::new(SETPRIV).exists() {
            let mut c = Command::new(SETPRIV);
            c.args(["--pdeathsig", "KILL", "--"]).arg(executable);
            c
        } else {
            Command::new(executable)
        };
        cmd.args(flags(allowed_hosts))
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let launch_err = |message: String| BrowseError::Launch {
            executable: executable.to_path_buf(),
            message,
        };
        let mut child = cmd.spawn().map_err(|e| launch_err(e.to_string()))?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(nix::unistd::Pid::from_raw);
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| launch_err("no stderr pipe".into()))?;
        let mut lines = BufReader::new(stderr).lines();
        let mut tail: Vec<String> = Vec::new();
        let found = tokio::time::timeout(timeout, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.find("ws://") {
                    return Some(line[at..].trim().to_string());
                }
                if tail.len() == 5 {
                    tail.remove(0);
                }
                tail.push(line);
            }
            None
        })
        .await;
        let mut chromium = Chromium {
            child,
            pgid,
            ws_url: String::new(),
            _profile: profile,
        };
        match found {
            Ok(Some(url)) => {
                chromium.ws_url = url;
                // Keep draining stderr so Chromium never blocks on a full pipe.
                tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                Ok(chromium)
            }
            Ok(None) => Err(launch_err(format!(
                "exited before printing its DevTools address: {}",
                tail.join(" | ")
            ))),
            Err(_) => Err(launch_err(format!(
                "no DevTools address within {} ms",
                timeout.as_millis()
            ))),
        }
    }

    /// The operating-system process id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            // The whole group: the browser and every renderer, GPU and
            // utility process it forked. An error means it is already gone.
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        }
        let _ = self.child.start_kill();
        // Reap it, so no zombie outlives us (it was just killed).
        let _ = self.child.try_wait();
    }
}

/// The Chromium to use: `explicit`, else `FIRSTTOKEN_CHROMIUM`, else the
/// first of `chromium`, `chromium-browser`, `google-chrome` on `PATH`.
pub fn find_chromium(explicit: Option<&Path>) -> Result<PathBuf, BrowseError> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("FIRSTTOKEN_CHROMIUM") {
        return Ok(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(BrowseError::NoChromium)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromium_resolves_only_the_allowed_hosts_and_stays_quiet() {
        let f = flags(&["127.0.0.1".into(), "app.test".into()]);
        assert!(
            f.contains(
                &"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE app.test"
                    .to_string()
            )
        );
        for quiet in [
            "--disable-background-networking",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--no-proxy-server",
            "--remote-debugging-address=127.0.0.1",
        ] {
            assert!(f.iter().any(|a| a == quiet), "{quiet} missing: {f:?}");
        }
    }
}
