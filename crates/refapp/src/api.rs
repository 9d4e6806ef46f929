//! Accounts, history, health and version endpoints.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::json;

use crate::AppState;
use crate::answer::{authenticate, unix_now};
use crate::auth;
use crate::http::{ApiError, RawBody};
use crate::store::StoreError;

/// The body of `/api/auth/signup` and `/api/auth/login`.
#[derive(serde::Deserialize)]
struct Credentials {
    email: String,
    password: String,
}

async fn issue_token(state: &AppState, user_id: i64) -> Result<(String, i64), ApiError> {
    let token = auth::new_token().map_err(|e| ApiError::internal(format!("no randomness: {e}")))?;
    let ttl = i64::try_from(state.inner.config.options.token_ttl.as_secs()).unwrap_or(i64::MAX);
    let expires_at = unix_now().saturating_add(ttl);
    state.db_call().await;
    state
        .inner
        .store
        .create_token(user_id, &auth::token_hash(&token), expires_at)
        .await?;
    Ok((token, expires_at))
}

fn account(user_id: i64, email: &str, token: &str, expires_at: i64) -> serde_json::Value {
    json!({
        "user_id": user_id,
        "email": email,
        "token": token,
        "token_type": "bearer",
        "expires_at": expires_at,
    })
}

/// `POST /api/auth/signup` → 201, or 409 when the email is taken.
pub(crate) async fn signup(
    State(state): State<AppState>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let _permit = state.serial_permit().await;
    let c: Credentials = body.json()?;
    let email = auth::normalize_email(&c.email).map_err(ApiError::bad_request)?;
    auth::check_password(&c.password).map_err(ApiError::bad_request)?;
    // A place under the sign-up limit is taken now, and given back when
    // the account is not created.
    let signups = &state.inner.signups;
    if let Some(limit) = state.inner.config.options.signup_limit
        && signups
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_err()
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "signup_closed",
            "sign-up is closed; sign in to an existing account",
        ));
    }
    let created = async {
        let hash = state.inner.hashing.hash(c.password).await?;
        state.db_call().await;
        let user_id = match state.inner.store.create_user(&email, &hash).await {
            Err(StoreError::Conflict) => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "conflict",
                    "an account with this email already exists",
                ));
            }
            r => r?,
        };
        let (token, expires_at) = issue_token(&state, user_id).await?;
        Ok((user_id, token, expires_at))
    }
    .await;
    let (user_id, token, expires_at) = created.inspect_err(|_| {
        if state.inner.config.options.signup_limit.is_some() {
            signups.fetch_sub(1, Ordering::SeqCst);
        }
    })?;
    Ok((
        StatusCode::CREATED,
        Json(account(user_id, &email, &token, expires_at)),
    )
        .into_response())
}

/// `DELETE /api/admin/users/{id}` → 204 with the admin token, 404 when
/// there is no such user; 401 without a token, 403 with any other (a
/// user's own token cannot delete accounts).
pub(crate) async fn admin_delete_user(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let token =
        auth::bearer(&headers).ok_or_else(|| ApiError::unauthorized("missing bearer token"))?;
    // Compared as hashes: the time taken says nothing about the token.
    let admin = state.inner.config.options.admin_token.as_deref();
    if admin.map(auth::token_hash) != Some(auth::token_hash(token)) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "deleting users needs the admin token",
        ));
    }
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::not_found(format!("no user {id:?}")))?;
    state.db_call().await;
    if state.inner.store.delete_user(id).await? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(ApiError::not_found(format!("no user {id}")))
    }
}

/// `POST /api/auth/login` → 200 with a new token, or 401.
pub(crate) async fn login(
    State(state): State<AppState>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let _permit = state.serial_permit().await;
    let c: Credentials = body.json()?;
    let email = auth::normalize_email(&c.email)
        .map_err(|_| ApiError::unauthorized("wrong email or password"))?;
    state.db_call().await;
    let user = state.inner.store.user_by_email(&email).await?;
    let ok = state
        .inner
        .hashing
        .verify(c.password, user.as_ref().map(|u| u.password_hash.clone()))
        .await?;
    let Some(user) = user.filter(|_| ok) else {
        return Err(ApiError::unauthorized("wrong email or password"));
    };
    let (token, expires_at) = issue_token(&state, user.id).await?;
    Ok(Json(account(user.id, &email, &token, expires_at)).into_response())
}

/// `GET /api/conversations/{id}/messages` → the stored messages, oldest first.
pub(crate) async fn conversation_messages(
    State(state): State<AppState>,
    Extension(ctx): Extension<crate::http::RequestCtx>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let user_id = authenticate(&state, &headers, &mut 0, &ctx.span).await?;
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::not_found(format!("no conversation {id:?}")))?;
    state.db_call().await;
    let messages = state
        .inner
        .store
        .history(user_id, id, 1000)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no conversation {id}")))?;
    Ok(Json(json!({"conversation_id": id, "messages": messages})).into_response())
}

/// The body of `POST /api/conversations` (all optional).
#[derive(serde::Deserialize, Default)]
struct NewConversation {
    /// The conversation's title (default `New chat`).
    #[serde(default)]
    title: Option<String>,
}

/// `POST /api/conversations` → 201 `{"conversation_id": N}`: an empty
/// conversation, as a chat UI creates one before the first message is
/// sent (`/api/chat` with that `conversation_id` then continues it).
pub(crate) async fn create_conversation(
    State(state): State<AppState>,
    Extension(ctx): Extension<crate::http::RequestCtx>,
    headers: HeaderMap,
    body: RawBody,
) -> Result<Response, ApiError> {
    let user_id = authenticate(&state, &headers, &mut 0, &ctx.span).await?;
    let req: NewConversation = if body.0.is_empty() {
        NewConversation::default()
    } else {
        body.json()?
    };
    let title: String = req
        .title
        .as_deref()
        .unwrap_or("New chat")
        .chars()
        .take(80)
        .collect();
    state.db_call().await;
    let id = state
        .inner
        .store
        .create_conversation(user_id, &title)
        .await?;
    Ok((
        StatusCode::CREATED,
        [("x-conversation-id", id.to_string())],
        Json(json!({"conversation_id": id, "title": title})),
    )
        .into_response())
}

/// `GET /health` → 200 when the database answers, 503 otherwise.
pub(crate) async fn health(State(state): State<AppState>) -> Response {
    let store = &state.inner.store;
    let ping = tokio::time::timeout(
        state.inner.config.options.db_timeout + Duration::from_millis(100),
        async {
            state.db_call().await;
            store.ping().await
        },
    )
    .await;
    match ping {
        Ok(Ok(())) => Json(json!({"status": "ok", "database": store.backend()})).into_response(),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unavailable", "database": store.backend()})),
        )
            .into_response(),
    }
}

/// `GET /version` → the build's git revision or the `--version-label`.
pub(crate) async fn version(State(state): State<AppState>) -> Response {
    let (version, source) = match &state.inner.config.options.version_label {
        Some(l) => (l.as_str(), "label"),
        None => (crate::GIT_REVISION, "git"),
    };
    Json(json!({
        "version": version,
        "source": source,
        "package_version": env!("CARGO_PKG_VERSION"),
    }))
    .into_response()
}

/// Any other path.
pub(crate) async fn not_found() -> ApiError {
    ApiError::not_found("no such endpoint")
}

/// A known path with the wrong method.
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        "method not allowed on this endpoint",
    )
}
