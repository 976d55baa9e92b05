//! Backstop detection for a concrete error type, found by autoref
//! specialisation where the expansion knows the type.

use std::error::Error as StdError;

/// The backstop `detect` hook for a concrete error expression: autoref
/// specialisation over [`ViaStdError`], [`ViaAsRef`], [`ViaNothing`]. A macro so
/// the method lookup happens where the error type is concrete, and so the
/// trait imports stay inside this expansion rather than in user code.
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_detect {
    ($e:expr) => {{
        use $crate::__private::{ViaAsRef as _, ViaNothing as _, ViaStdError as _};
        (&&&$crate::__private::ErrProbe($e)).idem_dyn()
    }};
}
pub use crate::__idem_detect as detect;

/// Autoref specialisation: finds the `&dyn Error` view of a concrete error type,
/// whether it implements `std::error::Error` or is `anyhow`-like
/// (`AsRef<dyn Error + Send + Sync>`). Used as `(&&&ErrProbe(e)).idem_dyn()`.
#[derive(Debug)]
pub struct ErrProbe<'a, T: ?Sized>(pub &'a T);

/// First choice: the type is a `std::error::Error`.
pub trait ViaStdError<'a> {
    /// The view.
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)>;
}
impl<'a, T: StdError + 'static> ViaStdError<'a> for &&ErrProbe<'a, T> {
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)> {
        Some(self.0)
    }
}

/// Second choice: `anyhow::Error`, `eyre::Report` and friends.
pub trait ViaAsRef<'a> {
    /// The view.
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)>;
}
impl<'a, T: AsRef<dyn StdError + Send + Sync + 'static>> ViaAsRef<'a> for &ErrProbe<'a, T> {
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)> {
        Some(self.0.as_ref())
    }
}

/// Last resort: the error cannot be searched.
pub trait ViaNothing<'a> {
    /// No view.
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)>;
}
impl<'a, T: ?Sized> ViaNothing<'a> for ErrProbe<'a, T> {
    fn idem_dyn(&self) -> Option<&'a (dyn StdError + 'static)> {
        None
    }
}
