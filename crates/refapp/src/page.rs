//! `GET /chat`: the app's chat page, one HTML file with plain JavaScript
//! that signs in (a token kept in `localStorage` under `refapp_token`),
//! posts the message to `/api/chat` and renders the SSE answer into a new
//! `.assistant` element as it streams. The page's render modes (the
//! known-bad front end: a delay per render, buffering) come from
//! [`crate::Options::page_render_delay`] and [`crate::Options::page_buffer`].

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::config::PageBuffer;

const PAGE: &str = include_str!("page/chat.html");

/// The page with the app's render modes filled in.
pub(crate) async fn chat_page(State(state): State<AppState>) -> Response {
    let o = &state.config().options;
    let buffer = match o.page_buffer {
        PageBuffer::Off => serde_json::Value::Null,
        PageBuffer::Tokens(n) => serde_json::Value::from(n),
        PageBuffer::End => serde_json::Value::from("end"),
    };
    let config = serde_json::json!({
        "render_delay_ms": o.page_render_delay.as_secs_f64() * 1000.0,
        "buffer": buffer,
    });
    // JSON inside <script>: `<` escaped so no value can close the element.
    let config = config.to_string().replace('<', "\\u003c");
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PAGE.replace("__PAGE_CONFIG__", &config),
    )
        .into_response()
}
