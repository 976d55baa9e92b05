use idem::Idem;

#[derive(Debug)]
pub struct AppError;
impl From<idem::Error> for AppError {
    fn from(_: idem::Error) -> Self {
        AppError
    }
}

pub struct Form {
    pub token: String,
}

#[idem::idempotent(key = "order-create:<req_id>", token = "<form.token>", handle = idem)]
async fn create(idem: &Idem, req_id: u64, form: &Form) -> Result<u64, AppError> {
    Ok(req_id)
}

fn main() {
    let _ = create;
}
