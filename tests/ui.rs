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

/// No diagnostic names idem's private module or points into idem's
/// sources. Unmet bounds end in "required by a bound in `__idem_run`" (a local
/// function of the expansion, shown at the user's attribute), not in
/// `idem::__private::…` with a snippet of `idem-runtime/src/…`.
#[test]
fn no_diagnostic_names_a_private_path() {
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir("tests/ui/fail").expect("tests/ui/fail") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "stderr") {
            let text = std::fs::read_to_string(&path).expect("a .stderr file");
            for (n, line) in text.lines().enumerate() {
                if ["__private", "idem-runtime/src", "idem_runtime"]
                    .iter()
                    .any(|p| line.contains(p))
                {
                    offenders.push(format!("{}:{}: {line}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}
