//! What a key part is ([`KeyPart`]) and where it writes ([`PartWriter`]).

use std::fmt;

use super::escape::escape_into;

/// Marks an absent optional part.
pub(crate) const NONE_MARK: &str = "%-";
/// Prefixes a present optional part whose own text starts with a marker, so
/// `Some(None)` (`%+%-`) differs from `None` (`%-`).
pub(crate) const SOME_MARK: &str = "%+";

/// Where a [`KeyPart`] writes itself; everything written is escaped.
#[derive(Debug)]
pub struct PartWriter<'a>(&'a mut String);

impl<'a> PartWriter<'a> {
    pub(crate) fn new(buf: &'a mut String) -> Self {
        PartWriter(buf)
    }

    /// Writes text, escaping separators and control characters.
    pub fn write_str(&mut self, s: &str) {
        escape_into(self.0, s);
    }

    /// Writes anything `Display`, escaped.
    pub fn write_display(&mut self, v: &dyn fmt::Display) {
        struct Esc<'a>(&'a mut String);
        impl fmt::Write for Esc<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                escape_into(self.0, s);
                Ok(())
            }
        }
        // Writing into a String cannot fail.
        let _ = fmt::write(&mut Esc(self.0), format_args!("{v}"));
    }

    /// Writes an integer in decimal: digits and `-` never need escaping.
    fn write_int(&mut self, v: impl itoa::Integer) {
        self.0.push_str(itoa::Buffer::new().format(v));
    }

    /// Writes `value` as a present option: unchanged, unless its text starts with
    /// a marker (it is itself an option), then behind [`SOME_MARK`].
    fn write_some(&mut self, value: &dyn KeyPart) {
        let start = self.0.len();
        value.write_part(self);
        let own = &self.0[start..];
        if own.starts_with(NONE_MARK) || own.starts_with(SOME_MARK) {
            self.0.insert_str(start, SOME_MARK);
        }
    }
}

/// A value that can be a key part. Implemented for strings, integers, `bool`,
/// `char`, `uuid::Uuid`, references and `Option`s of those.
///
/// Implement it for your own identifiers by delegating to a field or to
/// [`PartWriter::write_display`]:
/// ```
/// use idem::key::{KeyPart, PartWriter};
/// struct OrderNo(String);
/// impl KeyPart for OrderNo {
///     fn write_part(&self, out: &mut PartWriter<'_>) { out.write_str(&self.0) }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as an idempotency key part",
    label = "not a key part",
    note = "key parts are strings, integers, bool, char, uuid::Uuid, or types implementing `idem::KeyPart`"
)]
pub trait KeyPart {
    /// Writes this part's text.
    fn write_part(&self, out: &mut PartWriter<'_>);
}

impl<T: KeyPart + ?Sized> KeyPart for &T {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        (**self).write_part(out)
    }
}
impl<T: KeyPart + ?Sized> KeyPart for &mut T {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        (**self).write_part(out)
    }
}
impl<T: KeyPart + ?Sized> KeyPart for Box<T> {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        (**self).write_part(out)
    }
}
/// `None` is `%-`; `Some(v)` is `v`'s text, behind `%+` only when that text
/// starts with a marker (nested options), so single options keep their form.
impl<T: KeyPart> KeyPart for Option<T> {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        match self {
            Some(v) => out.write_some(v),
            None => out.0.push_str(NONE_MARK),
        }
    }
}
impl KeyPart for str {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        out.write_str(self)
    }
}
impl KeyPart for String {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        out.write_str(self)
    }
}
impl KeyPart for std::borrow::Cow<'_, str> {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        out.write_str(self)
    }
}
impl KeyPart for uuid::Uuid {
    fn write_part(&self, out: &mut PartWriter<'_>) {
        out.write_display(&self.hyphenated())
    }
}
macro_rules! display_parts {
    ($($t:ty),*) => {$(
        impl KeyPart for $t {
            fn write_part(&self, out: &mut PartWriter<'_>) { out.write_display(self) }
        }
    )*};
}
display_parts!(bool, char);

/// Integers: decimal digits and `-` never need escaping, so they are written
/// by `itoa` without the formatting machinery or the escaping scan. The text
/// is what `Display` writes.
macro_rules! int_parts {
    ($($t:ty),*) => {$(
        impl KeyPart for $t {
            fn write_part(&self, out: &mut PartWriter<'_>) {
                out.write_int(*self)
            }
        }
    )*};
}
int_parts!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
);
