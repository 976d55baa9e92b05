//! Exhaustive model check (filled below).
