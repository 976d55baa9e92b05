//! Every command the README, `docs/*.md` and the examples' headers show is one
//! that CI runs or one that works as written, so none can go stale:
//!
//! - `cargo run --example NAME …`: the example exists, and its
//!   `required-features` are on with the features the command names (an
//!   environment variable that picks a backend needs that backend's feature);
//! - `cargo bench -p idem-bench --bench NAME …`: the bench exists in the
//!   benchmark's own package (CI builds it with `clippy --all-targets`);
//! - any other command: `.ci/run` runs it (its words appear, in order, in one
//!   of CI's command lines), so the README's test command is CI's;
//! - the README's first block is the two set-up commands, and `.ci/run` runs
//!   both; the README stays short; relative links point at files that exist.
//!
//! Commands are the lines of ```` ```sh ```` (or `bash`, `shell`, `console`)
//! blocks and the code spans that start with `cargo` or a variable assignment;
//! ```` ```text ```` blocks are output, not commands.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[path = "docs_commands/extract.rs"]
mod extract;

use extract::{commands_in_example, commands_in_markdown, is_assignment, markdown_files};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Variables a shown command may set: the examples' backends and the test knobs.
const VARIABLES: &[&str] = &[
    "DATABASE_URL",
    "REDIS_URL",
    "AMQP_URL",
    "NATS_URL",
    "RUST_LOG",
    "RUSTDOCFLAGS",
    "IDEM_STRESS",
    "IDEM_SIM_SEEDS",
    "IDEM_SIM_SEED",
    "IDEM_SIM_REAL_SEEDS",
];

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workspace manifest, as much of it as the checks need.
struct Manifest {
    default: BTreeSet<String>,
    features: BTreeSet<String>,
    /// (kind, name) -> required features, for `[[example]]` and `[[bench]]`.
    targets: Vec<(String, String, BTreeSet<String>)>,
}

fn list(value: &str) -> BTreeSet<String> {
    value
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn manifest() -> Manifest {
    let mut m = Manifest {
        default: BTreeSet::new(),
        features: BTreeSet::new(),
        targets: Vec::new(),
    };
    read_manifest(&mut m, "Cargo.toml");
    read_manifest(&mut m, "idem-bench/Cargo.toml");
    m
}

/// Adds one manifest's features and targets to `m`.
fn read_manifest(m: &mut Manifest, path: &str) {
    let text = read(&Path::new(ROOT).join(path));
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_owned();
            if let Some(kind) = line
                .strip_prefix("[[")
                .and_then(|l| l.strip_suffix("]]"))
                .filter(|k| *k == "example" || *k == "bench")
            {
                m.targets
                    .push((kind.to_owned(), String::new(), BTreeSet::new()));
            }
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if section == "[features]" {
            m.features.insert(k.to_owned());
            if k == "default" {
                m.default = list(v);
            }
        } else if section == "[[example]]" || section == "[[bench]]" {
            let t = m.targets.last_mut().expect("a target section");
            match k {
                "name" => t.1 = v.trim_matches('"').to_owned(),
                "required-features" => t.2 = list(v),
                _ => {}
            }
        }
    }
}

/// What is wrong with one shown command, if anything.
fn check(cmd: &str, m: &Manifest, ci: &[Vec<String>]) -> Result<(), String> {
    let words: Vec<&str> = cmd.split(' ').collect();
    let vars: Vec<(&str, &str)> = words
        .iter()
        .take_while(|w| is_assignment(w))
        .map(|w| w.split_once('=').expect("an assignment"))
        .collect();
    for (k, _) in &vars {
        if !VARIABLES.contains(k) {
            return Err(format!(
                "`{k}` is not one of the documented variables {VARIABLES:?}"
            ));
        }
    }
    let args = &words[vars.len()..];
    let target = match args {
        ["cargo", "run", "--example", name, ..] => Some(("example", *name, &args[4..])),
        ["cargo", "bench", "-p", "idem-bench", "--bench", name, ..] => {
            Some(("bench", *name, &args[6..]))
        }
        _ => None,
    };
    let Some((kind, name, rest)) = target else {
        // Run by CI: its words, in order, in one of CI's commands.
        let found = ci.iter().any(|line| {
            let mut it = line.iter();
            args.iter().all(|w| it.any(|c| c == w))
        });
        return if found {
            Ok(())
        } else {
            Err("neither `.ci/run` nor a test runs this command".into())
        };
    };
    let mut on: BTreeSet<String> = m.default.clone();
    let mut all = false;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match *a {
            "--all-features" => all = true,
            "--no-default-features" => on.clear(),
            "--features" | "-F" => {
                let v = it.next().ok_or("`--features` without a value")?;
                for f in v.split(',') {
                    if !m.features.contains(f) {
                        return Err(format!("no feature `{f}`"));
                    }
                    on.insert(f.to_owned());
                }
            }
            "--" => break,
            other if other.starts_with('-') => {}
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    let exists = match kind {
        "example" => {
            let dir = Path::new(ROOT).join("examples");
            dir.join(format!("{name}.rs")).exists() || dir.join(name).join("main.rs").exists()
        }
        _ => m.targets.iter().any(|t| t.0 == kind && t.1 == name),
    };
    if !exists {
        return Err(format!("no {kind} `{name}`"));
    }
    let mut need: BTreeSet<String> = m
        .targets
        .iter()
        .find(|t| t.0 == kind && t.1 == name)
        .map(|t| t.2.clone())
        .unwrap_or_default();
    for (k, v) in &vars {
        let feature = match *k {
            "DATABASE_URL" if v.starts_with("postgres") => "postgres",
            "DATABASE_URL" if v.starts_with("mysql") || v.starts_with("mariadb") => "mysql",
            "REDIS_URL" => "redis",
            "AMQP_URL" => "rabbitmq",
            "NATS_URL" => "nats",
            _ => continue,
        };
        need.insert(feature.to_owned());
    }
    let missing: Vec<&String> = need.iter().filter(|f| !all && !on.contains(*f)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "needs the features {missing:?}, which the command leaves off"
        ))
    }
}

/// `.ci/run`'s command lines, as words (continuations joined).
fn ci_commands() -> Vec<Vec<String>> {
    let text = read(&Path::new(ROOT).join(".ci/run"));
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('#') {
            continue;
        }
        if let Some(cont) = l.strip_suffix('\\') {
            pending.push_str(cont);
            pending.push(' ');
            continue;
        }
        pending.push_str(l);
        out.push(
            pending
                .split_whitespace()
                .filter(|w| !is_assignment(w))
                .map(str::to_owned)
                .collect(),
        );
        pending.clear();
    }
    out
}

#[test]
fn every_shown_command_is_run_by_ci_or_works_as_written() {
    let m = manifest();
    let ci = ci_commands();
    let mut shown = Vec::new();
    for path in markdown_files() {
        for (line, cmd) in commands_in_markdown(&read(&path)) {
            shown.push((format!("{}:{line}", path.display()), cmd));
        }
    }
    let mut examples: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("examples"))
        .expect("examples/")
        .map(|e| e.expect("an entry").path())
        .map(|p| if p.is_dir() { p.join("main.rs") } else { p })
        .filter(|p| p.extension().is_some_and(|x| x == "rs") && p.exists())
        .collect();
    examples.sort();
    for path in examples {
        for (line, cmd) in commands_in_example(&read(&path)) {
            shown.push((format!("{} header:{line}", path.display()), cmd));
        }
    }
    assert!(
        shown.len() > 20,
        "found only {} commands: {shown:?}",
        shown.len()
    );
    let bad: Vec<String> = shown
        .iter()
        .filter_map(|(at, cmd)| {
            check(cmd, &m, &ci)
                .err()
                .map(|e| format!("{at}: `{cmd}`: {e}"))
        })
        .collect();
    assert!(bad.is_empty(), "stale commands:\n{}", bad.join("\n"));
}

#[test]
fn the_readme_opens_with_the_two_commands_and_ci_runs_both() {
    let readme = read(&Path::new(ROOT).join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "the README has {lines} lines; keep it at about 300"
    );
    let first = commands_in_markdown(&readme);
    let first: Vec<&str> = first.iter().take(2).map(|(_, c)| c.as_str()).collect();
    assert_eq!(
        first,
        [
            "cargo run --example quickstart",
            "cargo test --workspace --all-features"
        ]
    );
    let ci = read(&Path::new(ROOT).join(".ci/run"));
    for cmd in first {
        // As written: the whole line, or the line's start before a pipe.
        assert!(
            ci.lines()
                .any(|l| l.trim() == cmd || l.trim().starts_with(&format!("{cmd} |"))),
            "`.ci/run` does not run `{cmd}` as written"
        );
    }
}

#[test]
fn relative_links_in_the_docs_point_at_files() {
    let mut bad = Vec::new();
    for path in markdown_files() {
        let text = read(&path);
        let dir = path.parent().expect("a directory");
        let mut rest = text.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = &after[..end];
            rest = &after[end..];
            let file = target.split('#').next().unwrap_or("");
            if file.is_empty() || file.contains("://") || file.starts_with("mailto:") {
                continue;
            }
            if !dir.join(file).exists() {
                bad.push(format!("{}: `{target}`", path.display()));
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

/// Every page of `docs/` with a Rust snippet is a doctest (`src/lib.rs`
/// includes it under `cfg(doctest)`), so none of its snippets can go stale.
#[test]
fn every_docs_page_with_rust_snippets_is_doctested() {
    let lib = read(&Path::new(ROOT).join("src/lib.rs"));
    let mut missing = Vec::new();
    for page in markdown_files() {
        let rel = page
            .strip_prefix(ROOT)
            .unwrap_or(&page)
            .to_string_lossy()
            .into_owned();
        let Some(name) = rel.strip_prefix("docs/") else {
            continue;
        };
        if read(&page).lines().any(|l| l.starts_with("```rust"))
            && !lib.contains(&format!("include_str!(\"../docs/{name}\")"))
        {
            missing.push(rel);
        }
    }
    assert!(
        missing.is_empty(),
        "pages with Rust snippets that no doctest includes (add them to `docs_pages` in src/lib.rs): {missing:?}"
    );
}
