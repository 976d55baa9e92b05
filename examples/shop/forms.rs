//! `GET /forms/feedback` issues a one-time token (the form's hidden field);
//! `POST /forms/feedback` consumes it: a double-submitted form is saved once,
//! the second submission gets `409` (`Error::TokenInvalid`).

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;

use super::{Shop, ShopError};

const SCOPE: &str = "token:feedback-form";

pub(super) async fn issue(State(shop): State<Shop>) -> Result<Json<serde_json::Value>, ShopError> {
    let token = shop
        .idem
        .tokens()
        .issue(SCOPE, Duration::from_secs(600))
        .await?;
    Ok(Json(serde_json::json!({ "token": token.as_str() })))
}

#[derive(Debug, Deserialize)]
pub(crate) struct Feedback {
    pub(crate) token: String,
    pub(crate) text: String,
}

pub(super) async fn submit(
    State(shop): State<Shop>,
    Json(form): Json<Feedback>,
) -> Result<(StatusCode, Json<serde_json::Value>), ShopError> {
    let db = shop.db.clone();
    let text = form.text.clone();
    let id = shop
        .idem
        .tokens()
        .consume(SCOPE, &form.token)
        .run(|_fence| async move {
            let id: i64 = sqlx::query_scalar("INSERT INTO feedback (text) VALUES (?) RETURNING id")
                .bind(&text)
                .fetch_one(&db)
                .await?;
            Ok::<_, ShopError>(id)
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(serde_json::json!({ "feedback": id })),
    ))
}
