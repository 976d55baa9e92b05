//! `&self` methods: the receiver can be a placeholder and is passed to `on_conflict`.
use idem::Idem;

#[derive(Debug)]
pub struct AppError(pub String);
impl From<idem::Error> for AppError {
    fn from(e: idem::Error) -> Self {
        AppError(e.to_string())
    }
}
impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for AppError {}

pub struct Service {
    pub idem: Idem,
    pub tenant: String,
}

impl Service {
    /// Creates an order once per tenant and request.
    #[idem::idempotent(key = "svc-order:<self.tenant>:<req_id>", backstop = "uk_order", on_conflict = Self::find, handle = &self.idem)]
    pub async fn create(&self, req_id: &str) -> Result<String, AppError> {
        Ok(format!("{}-{req_id}", self.tenant))
    }

    async fn find(&self, req_id: &&str) -> Result<String, AppError> {
        Ok(format!("{}-{req_id}", self.tenant))
    }

    #[idem::idempotent(key = "svc-bump:<n>", handle = &self.idem)]
    pub async fn bump(&mut self, n: u32) -> Result<u32, AppError> {
        self.tenant.push('!');
        Ok(n + 1)
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let idem = Idem::builder().store(idem::MemoryStore::new()).build().unwrap();
    let mut svc = Service { idem, tenant: "t1".into() };
    assert_eq!(rt.block_on(svc.create("r1")).unwrap(), "t1-r1");
    assert_eq!(rt.block_on(svc.bump(1)).unwrap(), 2);
    assert_eq!(rt.block_on(svc.bump(1)).unwrap(), 2);
    assert_eq!(svc.tenant, "t1!");
}
