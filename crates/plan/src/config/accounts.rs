//! `[app.auth]` and `[app.cleanup]`: the session's test accounts and the
//! credential each request carries.
//!
//! | request | credential |
//! | --- | --- |
//! | sign-up, sign-in | none (the body carries the e-mail and password) |
//! | measured app requests | the test account's bearer token, unless the path is `anonymous` |
//! | cleanup, `http_delete` | the admin token from `admin_token_env`; without it, each account's own token |
//! | cleanup, SQL | the app database URL (`database_url_env`, or `database_url`) |
//! | direct | the provider key from `direct.api_key_env` |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[app.auth]`: the accounts the app's requests are sent as. Either the
/// session signs up its own test users `bench-<session>-<n>@bench.invalid`
/// (`signup_path`), deleted again by `[app.cleanup]`, or it signs in to
/// accounts that already exist (`signin_path`), which are never deleted.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// Sign-up path, e.g. `/api/auth/signup`: the session creates its own
    /// test accounts (sent with no credential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signup_path: Option<String>,
    /// Sign-in path, e.g. `/api/v1/auths/signin`: the session signs in to
    /// pre-provisioned accounts (sent with no credential), for apps whose
    /// sign-up is closed. These accounts are never deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signin_path: Option<String>,
    /// Body template of the sign-up or sign-in request; `{email}` and
    /// `{password}` are replaced (JSON-escaped).
    pub body: String,
    /// JSON pointer of the bearer token in the sign-up or sign-in response.
    pub token_pointer: String,
    /// JSON pointer of the created account's id in the sign-up response
    /// (needed to delete exactly that account); sign-up only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_pointer: Option<String>,
    /// Test accounts to sign up (requests rotate over them; default 1);
    /// sign-up only: with sign-in, every listed account is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounts: Option<u32>,
    /// Sign-in: the env var holding the accounts as `email:password`
    /// entries, separated by new lines or commas (a password holding a
    /// comma goes in `accounts_file`). Requests rotate over the accounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounts_env: Option<String>,
    /// Sign-in: a file of `email:password` lines (blank lines and lines
    /// starting with `#` skipped). Requests rotate over the accounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounts_file: Option<String>,
    /// Sign-in: one account reused for every request, by its e-mail
    /// (its password in `password_env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Sign-in: the env var holding the password of `email`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
}

/// How a session gets its accounts ([`AuthSection::mode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode<'a> {
    /// Sign up new test accounts, deleted by `[app.cleanup]`.
    SignUp {
        /// The sign-up path.
        path: &'a str,
        /// Where the response holds the account's id.
        id_pointer: &'a str,
        /// How many.
        accounts: u32,
    },
    /// Sign in to accounts that exist; never deleted.
    SignIn {
        /// The sign-in path.
        path: &'a str,
        /// Where their e-mails and passwords are read.
        accounts: AccountSource<'a>,
    },
}

/// Where pre-provisioned accounts' e-mails and passwords are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountSource<'a> {
    /// An env var of `email:password` entries.
    Env(&'a str),
    /// A file of `email:password` lines.
    File(&'a str),
    /// One account, its password in an env var.
    One {
        /// Its e-mail.
        email: &'a str,
        /// The env var holding its password.
        password_env: &'a str,
    },
}

impl AuthSection {
    /// Sign-up or sign-in, with what each needs; `Err((key, why))` for a
    /// section that says neither or both, or mixes their keys.
    pub fn mode(&self) -> Result<AuthMode<'_>, (&'static str, String)> {
        let signin_keys = [
            ("accounts_env", self.accounts_env.is_some()),
            ("accounts_file", self.accounts_file.is_some()),
            ("email", self.email.is_some()),
            ("password_env", self.password_env.is_some()),
        ];
        match (&self.signup_path, &self.signin_path) {
            (Some(_), Some(_)) | (None, None) => Err((
                "app.auth",
                "give signup_path (the session signs up test accounts and deletes them) or signin_path (it signs in to accounts that exist), one of the two".into(),
            )),
            (Some(path), None) => {
                if let Some((k, _)) = signin_keys.iter().find(|(_, set)| *set) {
                    return Err((
                        "app.auth",
                        format!("{k} names accounts to sign in to; with signup_path the session creates its own (use signin_path instead)"),
                    ));
                }
                let id_pointer = self.id_pointer.as_deref().ok_or((
                    "app.auth.id_pointer",
                    "sign-up needs the JSON pointer of the new account's id (e.g. \"/id\"), so exactly that account is deleted afterwards".to_string(),
                ))?;
                Ok(AuthMode::SignUp {
                    path,
                    id_pointer,
                    accounts: self.accounts.unwrap_or(1),
                })
            }
            (None, Some(path)) => {
                if self.accounts.is_some() {
                    return Err((
                        "app.auth.accounts",
                        "with signin_path every listed account is used; accounts counts sign-ups only".into(),
                    ));
                }
                if self.id_pointer.is_some() {
                    return Err((
                        "app.auth.id_pointer",
                        "accounts signed in to are never deleted, so no id is read; leave it out".into(),
                    ));
                }
                let accounts = match (
                    &self.accounts_env,
                    &self.accounts_file,
                    &self.email,
                    &self.password_env,
                ) {
                    (Some(var), None, None, None) => AccountSource::Env(var),
                    (None, Some(file), None, None) => AccountSource::File(file),
                    (None, None, Some(email), Some(password_env)) => AccountSource::One {
                        email,
                        password_env,
                    },
                    (None, None, Some(_), None) => {
                        return Err((
                            "app.auth.password_env",
                            "email needs the env var holding its password".into(),
                        ));
                    }
                    (None, None, None, Some(_)) => {
                        return Err((
                            "app.auth.email",
                            "password_env needs the account's email".into(),
                        ));
                    }
                    _ => {
                        return Err((
                            "app.auth",
                            "signin_path needs its accounts from one place: accounts_env, accounts_file, or email with password_env".into(),
                        ));
                    }
                };
                Ok(AuthMode::SignIn { path, accounts })
            }
        }
    }
}

/// `[app.cleanup]`: delete exactly the accounts the session signed up,
/// then count what is left. Each way carries its own credential, never a
/// test account's token unless told so.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CleanupSection {
    /// Env var holding the app database URL (postgres://… or a SQLite
    /// path): the credential of the SQL cleanup.
    #[serde(default)]
    pub database_url_env: Option<String>,
    /// The app database URL itself, for local set-ups without secrets (a
    /// SQLite path); use `database_url_env` for anything with a password.
    #[serde(default)]
    pub database_url: Option<String>,
    /// Delete statement, or several run in order (e.g. child tables
    /// first); `{ids}` becomes the comma-separated quoted id list.
    #[serde(default)]
    pub delete_sql: Option<SqlList>,
    /// Count statement for residual rows, or several (one per table the
    /// accounts leave rows in): the residual is their sum. `{ids}` as above.
    #[serde(default)]
    pub count_sql: Option<SqlList>,
    /// Alternatively, an HTTP request per id, its path a template: `{id}`
    /// becomes the account's id, e.g. `/api/admin/users/{id}`. A 2xx or
    /// 404 answer counts the account as gone; without `count_sql`, the
    /// residual is the accounts not gone.
    #[serde(default)]
    pub http_delete: Option<String>,
    /// The method of the `http_delete` request (default `DELETE`), e.g.
    /// `POST` for apps that delete with `POST /users/{id}/delete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_method: Option<String>,
    /// The env var holding an admin's bearer token, sent with every
    /// `http_delete` request. Unset: each account's own token is sent,
    /// which only an app that lets users delete themselves accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_token_env: Option<String>,
}

impl CleanupSection {
    /// The method of the `http_delete` requests.
    pub fn http_method(&self) -> &str {
        self.http_method.as_deref().unwrap_or("DELETE")
    }
}

/// One SQL statement or a list of them: `"DELETE …"` or `["DELETE …", "DELETE …"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "an SQL statement (a string) or a list of statements"
)]
pub enum SqlList {
    /// One statement.
    One(String),
    /// Several, in order.
    Many(Vec<String>),
}

impl SqlList {
    /// The statements, in order.
    pub fn statements(&self) -> &[String] {
        match self {
            SqlList::One(s) => std::slice::from_ref(s),
            SqlList::Many(v) => v,
        }
    }
}

impl From<&str> for SqlList {
    fn from(s: &str) -> SqlList {
        SqlList::One(s.to_string())
    }
}
