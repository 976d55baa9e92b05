//! Compile-time behaviour of `#[idempotent]`: diagnostics pinned by `.stderr`
//! files (regenerate with `TRYBUILD=overwrite`, then review) and expansions that
//! must compile and run.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
    // Axum handlers need idem's `axum` feature (trybuild builds the cases with
    // the features of this run).
    if cfg!(feature = "axum") {
        t.pass("tests/ui/axum/*.rs");
    }
}
