#[idem::idempotent(key = "order-create:<user.id>:<req.order_no>", fingerprint = [req], backstop = "uk_order_no", on_conflict = find_order, handle = &app.idem)]
async fn create_order(State(app): State<App>, user: User, Json(req): Json<CreateOrder>) -> Result<(StatusCode, Json<Order>), AppError> {
    Ok((StatusCode::CREATED, Json(insert(&app, &user, &req).await?)))
}
