//! How a handle finds unique violations: the user's detectors first, then the
//! built-in ones (idem's own sqlx types, then the text every version shares).

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use super::UniqueViolation;

/// Finds a unique violation in one link of an error chain.
///
/// Plug one in with `IdemBuilder::violation_detector` for a driver idem does not
/// know (another ORM, a wrapper that hides the message): it is asked first, for
/// every link, before the built-in detection. Any
/// `Fn(&(dyn Error + 'static)) -> Option<UniqueViolation>` is a detector.
///
/// ```
/// use std::error::Error;
/// use idem::{Idem, MemoryStore, backstop::UniqueViolation};
///
/// #[derive(Debug)]
/// struct MyDbError { code: u32, index: String }
/// impl std::fmt::Display for MyDbError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         write!(f, "db error {}", self.code)
///     }
/// }
/// impl Error for MyDbError {}
///
/// let idem = Idem::builder()
///     .store(MemoryStore::new())
///     .violation_detector(|e: &(dyn Error + 'static)| {
///         let e = e.downcast_ref::<MyDbError>().filter(|e| e.code == 7)?;
///         Some(UniqueViolation::named(&e.index))
///     })
///     .build()
///     .unwrap();
/// # drop(idem);
/// ```
pub trait ViolationDetector: Send + Sync + 'static {
    /// The unique violation `link` reports, if it is one. Only this link: the
    /// handle walks `source()` and asks again for each.
    fn inspect(&self, link: &(dyn StdError + 'static)) -> Option<UniqueViolation>;
}

impl<F> ViolationDetector for F
where
    F: Fn(&(dyn StdError + 'static)) -> Option<UniqueViolation> + Send + Sync + 'static,
{
    fn inspect(&self, link: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
        self(link)
    }
}

/// The detectors of one handle.
#[derive(Clone)]
pub(crate) struct Detection {
    custom: Vec<Arc<dyn ViolationDetector>>,
    builtin: bool,
}

impl Default for Detection {
    fn default() -> Self {
        Detection {
            custom: Vec::new(),
            builtin: true,
        }
    }
}

impl fmt::Debug for Detection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Detection")
            .field("custom", &self.custom.len())
            .field("builtin", &self.builtin)
            .finish()
    }
}

impl Detection {
    pub(crate) fn push(&mut self, d: Arc<dyn ViolationDetector>) {
        self.custom.push(d);
    }

    pub(crate) fn set_builtin(&mut self, on: bool) {
        self.builtin = on;
    }

    /// Walks `err`'s `source()` chain; the first link any detector recognises wins.
    pub(crate) fn find(&self, err: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
        walk(err, |link| {
            self.custom
                .iter()
                .find_map(|d| d.inspect(link))
                .or_else(|| self.builtin.then(|| builtin(link)).flatten())
        })
    }
}

/// The built-in detection of one link: the typed fast path, then the text.
pub(super) fn builtin(link: &(dyn StdError + 'static)) -> Option<UniqueViolation> {
    super::drivers::inspect_link(link).or_else(|| super::text::inspect_link(link))
}

/// The chain walk every detection shares.
pub(super) fn walk(
    err: &(dyn StdError + 'static),
    mut inspect: impl FnMut(&(dyn StdError + 'static)) -> Option<UniqueViolation>,
) -> Option<UniqueViolation> {
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    let mut depth = 0;
    while let Some(e) = cur {
        if let Some(v) = inspect(e) {
            return Some(v);
        }
        depth += 1;
        if depth > 32 {
            break; // a cyclic or absurd chain: give up rather than loop
        }
        cur = e.source();
    }
    None
}
