//! Compile-time messages the expansions raise as `const` panics, built in a
//! `const fn` because only the derive knows a machine's stored values and only
//! the `#[state_transition]` literal knows the typo: the panic names both and
//! suggests the closest value, as the macros' own did-you-mean does.

/// A message assembled at compile time (const panics take one `&str`).
#[derive(Debug, Clone, Copy)]
pub struct ConstMsg {
    buf: [u8; ConstMsg::CAP],
    len: usize,
}

impl ConstMsg {
    const CAP: usize = 1024;

    const fn new() -> Self {
        ConstMsg {
            buf: [0; Self::CAP],
            len: 0,
        }
    }

    /// Appends `s` whole, or nothing when it does not fit (so the text stays
    /// UTF-8: a long list of values is cut between two values).
    const fn push(mut self, s: &str) -> Self {
        let s = s.as_bytes();
        if self.len + s.len() > Self::CAP {
            return self;
        }
        let mut i = 0;
        while i < s.len() {
            self.buf[self.len + i] = s[i];
            i += 1;
        }
        self.len += s.len();
        self
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => s,
            Err(_) => "invalid stored value",
        }
    }
}

/// `None` when `value` is one of `values`; else the message for the const
/// panic of `Machine::__idem_stored(value)`: the typo, the closest stored
/// value when one is close enough, and every stored value.
pub const fn unknown_stored(machine: &str, value: &str, values: &[&str]) -> Option<ConstMsg> {
    let mut i = 0;
    while i < values.len() {
        if eq(values[i].as_bytes(), value.as_bytes()) {
            return None;
        }
        i += 1;
    }
    let mut m = ConstMsg::new()
        .push("`")
        .push(machine)
        .push("` has no state stored as `")
        .push(value)
        .push("`; its stored values are ");
    let mut i = 0;
    while i < values.len() {
        if i > 0 {
            m = m.push(", ");
        }
        m = m.push("`").push(values[i]).push("`");
        i += 1;
    }
    if let Some(near) = closest(value, values) {
        m = m.push("; did you mean `").push(values[near]).push("`?");
    }
    Some(m)
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Longest value compared for a suggestion (the distance rows are arrays).
const MAX: usize = 64;

/// The index of the value closest to `value`, if within a third of its length
/// (at least 1): the macros' rule (`idem-macros` `common::errors`).
const fn closest(value: &str, values: &[&str]) -> Option<usize> {
    let v = value.as_bytes();
    if v.len() > MAX {
        return None;
    }
    let limit = if v.len() / 3 > 1 { v.len() / 3 } else { 1 };
    let mut best: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < values.len() {
        let c = values[i].as_bytes();
        if c.len() <= MAX {
            let d = distance(v, c);
            let better = match best {
                None => true,
                Some((bd, _)) => d < bd,
            };
            if d <= limit && better {
                best = Some((d, i));
            }
        }
        i += 1;
    }
    match best {
        Some((_, i)) => Some(i),
        None => None,
    }
}

/// Optimal string alignment distance over bytes (a swap of neighbours costs
/// 1), both at most [`MAX`] long.
const fn distance(a: &[u8], b: &[u8]) -> usize {
    let mut two = [0usize; MAX + 1];
    let mut one = [0usize; MAX + 1];
    let mut cur = [0usize; MAX + 1];
    let mut j = 0;
    while j <= b.len() {
        one[j] = j;
        j += 1;
    }
    let mut i = 1;
    while i <= a.len() {
        cur[0] = i;
        let mut j = 1;
        while j <= b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            let mut d = min(min(one[j] + 1, cur[j - 1] + 1), one[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = min(d, two[j - 2] + 1);
            }
            cur[j] = d;
            j += 1;
        }
        two = one;
        one = cur;
        i += 1;
    }
    one[b.len()]
}

const fn min(a: usize, b: usize) -> usize {
    if a < b { a } else { b }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUES: &[&str] = &["WAIT_PAY", "PAY_SUCCESS", "SHIPPED"];

    #[test]
    fn names_the_typo_and_the_closest_value() {
        assert!(unknown_stored("OrderStatus", "PAY_SUCCESS", VALUES).is_none());
        let m = unknown_stored("OrderStatus", "PAY_SUCESS", VALUES).unwrap();
        assert_eq!(
            m.as_str(),
            "`OrderStatus` has no state stored as `PAY_SUCESS`; its stored values are \
             `WAIT_PAY`, `PAY_SUCCESS`, `SHIPPED`; did you mean `PAY_SUCCESS`?"
        );
        let m = unknown_stored("OrderStatus", "REFUNDED", VALUES).unwrap();
        assert!(!m.as_str().contains("did you mean"), "{}", m.as_str());
        assert_eq!(distance(b"kye", b"key"), 1);
        assert_eq!(distance(b"kitten", b"sitting"), 3);
    }

    #[test]
    fn a_long_list_is_cut_between_values() {
        let long: Vec<String> = (0..40).map(|_| "X".repeat(60)).collect();
        let values: Vec<&str> = long.iter().map(String::as_str).collect();
        let m = unknown_stored("M", "Y", &values).unwrap();
        assert!(
            m.as_str().ends_with('`') && m.as_str().len() <= 1024,
            "{}",
            m.as_str()
        );
    }
}
