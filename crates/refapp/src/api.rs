//! Accounts, history, health and version endpoints.

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
    Ok((
        StatusCode::CREATED,
        Json(account(user_id, &email, &token, expires_at)),
    )
        .into_response())
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
