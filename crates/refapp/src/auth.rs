//! Accounts: argon2id password hashes (OWASP default parameters), opaque
//! bearer tokens of which only the SHA-256 is stored.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use std::cell::RefCell;

use argon2::password_hash::phc::{Output, ParamsString, PasswordHash, Salt};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use axum::http::HeaderMap;
use sha2::{Digest, Sha256};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Longest accepted email (RFC 5321 path limit).
const MAX_EMAIL: usize = 254;
/// Shortest and longest accepted password, in bytes.
const PASSWORD_BYTES: std::ops::RangeInclusive<usize> = 8..=1024;
/// Tokens start with this, so a leaked one is recognisable.
const TOKEN_PREFIX: &str = "ftr_";

/// Why an email or password was refused.
pub(crate) type Invalid = &'static str;

/// Trimmed and lower-cased, with one `@` between a non-empty local part and
/// a domain that has a dot. `@bench.invalid` addresses are ordinary ones.
pub(crate) fn normalize_email(raw: &str) -> Result<String, Invalid> {
    let email = raw.trim().to_lowercase();
    if email.is_empty() || email.len() > MAX_EMAIL {
        return Err("email must be 1 to 254 characters");
    }
    let Some((local, domain)) = email.split_once('@') else {
        return Err("email must contain @");
    };
    if local.is_empty()
        || domain.contains('@')
        || !domain.contains('.')
        || domain.starts_with('.')
        || domain.ends_with('.')
        || email.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("email is not a valid address");
    }
    Ok(email)
}

pub(crate) fn check_password(password: &str) -> Result<(), Invalid> {
    if PASSWORD_BYTES.contains(&password.len()) {
        Ok(())
    } else {
        Err("password must be 8 to 1024 bytes")
    }
}

/// Bounds password hashing. Each argon2 hash takes ~19 MiB and tens of
/// milliseconds of CPU on purpose, so unbounded parallel logins or sign-ups
/// (which need no account) could exhaust memory. At most `concurrency`
/// hashes run at once, on the blocking pool; at most `queue` requests wait,
/// each for at most `wait`; anything beyond is [`HashError::Busy`] (503).
///
/// The hashes run on `concurrency` dedicated threads rather than tokio's
/// blocking pool: the pool hands each job to whichever thread is free or
/// starts a new one, and every new thread may get its own malloc arena that
/// keeps a freed 19 MiB block, so memory grew with the number of threads
/// ever used (840 MiB in the flood test) instead of with the slots.
pub(crate) struct HashGate {
    /// Feeds the hashing threads; dropping it ends them.
    jobs: mpsc::Sender<Job>,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
    wait: Duration,
}

/// Work for a hashing thread.
type Job = Box<dyn FnOnce() + Send>;

/// Why a hash could not be computed.
#[derive(Debug)]
pub(crate) enum HashError {
    /// Every hashing slot is busy and the queue is full or its deadline passed.
    Busy {
        /// How long the client should wait before retrying.
        retry_after: Duration,
    },
    /// argon2 or the blocking task failed.
    Failed(String),
}

/// Decrements the waiting count when a queued request stops waiting, also
/// when the request is dropped while queued.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl HashGate {
    pub(crate) fn new(concurrency: usize, queue: usize, wait: Duration) -> HashGate {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..concurrency {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("refapp-hash-{i}"))
                .spawn(move || {
                    loop {
                        // The lock is held only while taking a job.
                        let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        match job {
                            // A panicking job drops its permit and its reply
                            // while unwinding; the thread carries on.
                            Ok(job) => {
                                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                            }
                            Err(_) => return, // the gate was dropped
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::error!("cannot start a password hashing thread: {e}");
            }
        }
        HashGate {
            jobs: tx,
            permits: Arc::new(Semaphore::new(concurrency)),
            waiting: AtomicUsize::new(0),
            queue,
            wait,
        }
    }

    fn busy(&self) -> HashError {
        HashError::Busy {
            retry_after: self.wait.max(Duration::from_secs(1)),
        }
    }

    /// A hashing slot: at once, or after queueing within the bounds.
    async fn enter(&self) -> Result<OwnedSemaphorePermit, HashError> {
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Ok(p);
        }
        let before = self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(&self.waiting);
        if before >= self.queue {
            return Err(self.busy());
        }
        match tokio::time::timeout(self.wait, self.permits.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            // Timed out (the semaphore is never closed).
            _ => Err(self.busy()),
        }
    }

    /// Run `f` on a hashing thread while holding a slot. The permit moves
    /// with the job, so a client that disconnects mid-hash does not free its
    /// slot before the memory is.
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, HashError> {
        let permit = self.enter().await?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
            drop(permit);
        });
        if self.jobs.send(job).is_err() {
            return Err(HashError::Failed("the hashing threads are gone".into()));
        }
        rx.await
            .map_err(|_| HashError::Failed("a hashing thread panicked".into()))
    }

    /// Hash a new password (argon2id, default parameters, a random salt).
    pub(crate) async fn hash(&self, password: String) -> Result<String, HashError> {
        self.run(move || hash_new(password.as_bytes()))
            .await?
            .map_err(HashError::Failed)
    }

    /// True when `password` matches `hash`. An unparsable hash never matches.
    /// An unknown email (`None`) is checked against a dummy hash, so it costs
    /// the same time (and the same slot) as a wrong password and does not
    /// reveal which emails exist.
    pub(crate) async fn verify(
        &self,
        password: String,
        hash: Option<String>,
    ) -> Result<bool, HashError> {
        self.run(move || match hash {
            Some(h) => verify(password.as_bytes(), &h),
            None => {
                let _ = verify(password.as_bytes(), dummy_hash());
                false
            }
        })
        .await
    }
}

thread_local! {
    /// This hashing thread's argon2 memory, reused by every hash it computes:
    /// allocating 19 MiB per hash left freed blocks scattered over malloc
    /// arenas (hundreds of MiB after a flood, never returned).
    static BLOCKS: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
}

/// The most argon2 memory a stored hash may ask for (4 × the default).
const MAX_BLOCKS: usize = 4 * Params::DEFAULT_M_COST as usize;

/// argon2 of `password` into `out`, in this thread's reused memory.
fn argon2_into(argon: &Argon2, password: &[u8], salt: &[u8], out: &mut [u8]) -> Result<(), String> {
    let n = argon.params().block_count();
    if n > MAX_BLOCKS {
        return Err(format!("argon2 memory of {n} KiB is above the limit"));
    }
    BLOCKS.with_borrow_mut(|blocks| {
        if blocks.len() < n {
            blocks.resize(n, Block::default());
        }
        argon
            .hash_password_into_with_memory(password, salt, out, &mut blocks[..n])
            .map_err(|e| e.to_string())
    })
}

/// A PHC string (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) for `password`.
fn hash_new(password: &[u8]) -> Result<String, String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| e.to_string())?;
    let argon = Argon2::default();
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    argon2_into(&argon, password, &salt, &mut out)?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(argon.params()).map_err(|e| e.to_string())?,
        salt: Some(Salt::new(&salt).map_err(|e| e.to_string())?),
        hash: Some(Output::new(&out).map_err(|e| e.to_string())?),
    };
    Ok(phc.to_string())
}

/// Whether `password` matches the PHC string `hash` (constant-time compare).
fn verify(password: &[u8], hash: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(hash) else {
        return false;
    };
    let (Some(salt), Some(expected)) = (&parsed.salt, &parsed.hash) else {
        return false;
    };
    let Ok(algorithm) = Algorithm::try_from(parsed.algorithm.as_str()) else {
        return false;
    };
    let version = match parsed.version.map(Version::try_from) {
        None => Version::default(),
        Some(Ok(v)) => v,
        Some(Err(_)) => return false,
    };
    let Ok(params) = Params::try_from(&parsed) else {
        return false;
    };
    let argon = Argon2::new(algorithm, version, params);
    let mut out = vec![0u8; expected.len()];
    if argon2_into(&argon, password, salt.as_ref(), &mut out).is_err() {
        return false;
    }
    // `Output`'s equality is constant-time.
    Output::new(&out).is_ok_and(|o| &o == expected)
}

fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_new(b"firsttoken-refapp dummy password").unwrap_or_default())
}

/// A new random token: the prefix and 32 random bytes in hex.
pub(crate) fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{TOKEN_PREFIX}{}", hex(&bytes)))
}

/// What is stored for a token: its SHA-256 in hex.
pub(crate) fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// The token of an `Authorization: Bearer …` header.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = v.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        assert_eq!(
            normalize_email(" Load.Test-1@Bench.Invalid "),
            Ok("load.test-1@bench.invalid".to_string())
        );
        for bad in [
            "",
            "no-at",
            "@x.com",
            "a@b",
            "a@@b.com",
            "a b@c.com",
            "a@.com",
        ] {
            assert!(normalize_email(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bearer_header() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert("authorization", "Bearer abc".parse().unwrap());
        assert_eq!(bearer(&h), Some("abc"));
        h.insert("authorization", "bearer  abc ".parse().unwrap());
        assert_eq!(bearer(&h), Some("abc"));
        h.insert("authorization", "Basic abc".parse().unwrap());
        assert_eq!(bearer(&h), None);
        h.insert("authorization", "Bearer ".parse().unwrap());
        assert_eq!(bearer(&h), None);
    }

    #[test]
    fn tokens_are_random_and_hashed() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert!(a.starts_with("ftr_") && a.len() == 4 + 64);
        assert_eq!(token_hash(&a).len(), 64);
        assert_eq!(
            token_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[tokio::test]
    async fn passwords() {
        let gate = HashGate::new(2, 8, Duration::from_secs(30));
        let h = gate.hash("correct horse".into()).await.unwrap();
        assert!(h.starts_with("$argon2id$"));
        let v = |p: &str, h: Option<String>| gate.verify(p.into(), h);
        assert!(v("correct horse", Some(h.clone())).await.unwrap());
        assert!(!v("wrong horse", Some(h)).await.unwrap());
        assert!(!v("correct horse", None).await.unwrap());
        assert!(!v("x", Some("not a hash".into())).await.unwrap());
        // Hashes written by the argon2 crate's own hasher (older versions of
        // this app) still verify.
        use argon2::password_hash::PasswordHasher;
        let old: PasswordHash = Argon2::default().hash_password(b"old horse").unwrap();
        assert!(v("old horse", Some(old.to_string())).await.unwrap());
        assert!(!v("new horse", Some(old.to_string())).await.unwrap());
    }

    #[tokio::test]
    async fn a_full_gate_is_busy() {
        // One slot, no queue: while one hash runs, a second is refused at once.
        let gate = Arc::new(HashGate::new(1, 0, Duration::from_millis(200)));
        let held = gate.enter().await.unwrap();
        let r = gate.verify("password1".into(), None).await;
        assert!(
            matches!(r, Err(HashError::Busy { retry_after }) if retry_after >= Duration::from_secs(1))
        );
        assert_eq!(gate.waiting.load(Ordering::Relaxed), 0);
        // With a queue of one, the waiter gets the slot once it is freed.
        let gate2 = Arc::new(HashGate::new(1, 1, Duration::from_secs(30)));
        let held2 = gate2.enter().await.unwrap();
        let g = gate2.clone();
        let waiter = tokio::spawn(async move { g.verify("password1".into(), None).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The queue (one) is full now: a third request is refused.
        assert!(matches!(
            gate2.verify("password1".into(), None).await,
            Err(HashError::Busy { .. })
        ));
        drop(held2);
        assert!(!waiter.await.unwrap().unwrap());
        drop(held);
    }
}
