//! Which store and which config a command reads: the `--store` option
//! and the rule `run` picks a store by, shared by every command that
//! takes them (no command's own logic).

use anyhow::Context;
use clap::Args;

use firsttoken_session::DEFAULT_STORE;

/// The config file `run` reads unless told otherwise.
pub const DEFAULT_CONFIG_FILE: &str = "firsttoken.toml";

/// The store option shared by the session commands.
#[derive(Debug, Args)]
pub struct StoreArg {
    /// Result store: a SQLite file or a postgres:// URL (default: the config's session.store
    /// where the command reads a config, else firsttoken.db).
    #[arg(long, env = "FIRSTTOKEN_STORE")]
    pub store: Option<String>,
}

impl StoreArg {
    /// The store of a command that reads no config: `--store` (or
    /// `FIRSTTOKEN_STORE`), else the default.
    pub fn plain(&self) -> String {
        self.store.clone().unwrap_or_else(|| DEFAULT_STORE.into())
    }

    /// The store of a command that takes `-c`: [`store_url`].
    pub fn url(&self, config: Option<&std::path::Path>) -> anyhow::Result<String> {
        store_url(self.store.as_deref(), config)
    }
}

/// The config a command that takes `-c` reads its store from: the one
/// named, else ./firsttoken.toml when it exists (as `run` reads it).
pub fn config_or_default(named: Option<&std::path::Path>) -> Option<&std::path::Path> {
    named.or_else(|| {
        let d = std::path::Path::new(DEFAULT_CONFIG_FILE);
        d.is_file().then_some(d)
    })
}

/// The store a command uses, as `run` picks it: `--store` (or
/// `FIRSTTOKEN_STORE`) wins; else the `[session] store` of `config`; else
/// firsttoken.db. `config` is read only when no store was named.
pub fn store_url(flag: Option<&str>, config: Option<&std::path::Path>) -> anyhow::Result<String> {
    if let Some(s) = flag {
        return Ok(s.to_string());
    }
    let Some(path) = config else {
        return Ok(DEFAULT_STORE.into());
    };
    let cfg = firsttoken_plan::config::Config::load(path).with_context(|| {
        format!(
            "reading the store ([session] store) from {} (or name one with --store)",
            path.display()
        )
    })?;
    Ok(cfg.session.store.unwrap_or_else(|| DEFAULT_STORE.into()))
}
