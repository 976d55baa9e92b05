//! The import picture of the runtime, pinned (DESIGN §1: arrows point down).
//!
//! Reads this crate's sources and collects, for each top-level module, the
//! other top-level modules its code names through `crate::…` (grouped
//! imports included; comments, `tests.rs` files and `#[cfg(test)] mod tests`
//! blocks left out). Then: no circle among the modules, and the layers every
//! technique builds on (`store/`, `sql_kernel/`, `exec/`, `record`, `error`)
//! name no technique and not the handle. The techniques whose tables the SQL
//! store creates and purges (through its table set registry) are not named
//! anywhere in `store/`'s code, whatever the path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// What the layers below the techniques must never name.
const ABOVE: &[&str] = &[
    "handle",
    "guard",
    "lock",
    "token",
    "state",
    "state_cas",
    "consume",
    "outbox",
    "http",
    "txguard",
    "db",
    "private",
    "__private",
];
/// Techniques that keep tables beside the records: `store/` walks their
/// table sets through a registry and must not name them, in its imports or
/// anywhere else in its code (comments aside).
const TABLE_TECHNIQUES: &[&str] = &["consume", "outbox", "txguard"];
const BELOW: &[&str] = &["store", "sql_kernel", "exec", "record", "error", "backstop"];
/// The values every layer passes around: they name no layer that acts.
const VALUES: &[&str] = &["record", "error"];
/// What the values must never name, beside [`ABOVE`].
const ACTING: &[&str] = &[
    "store",
    "sql_kernel",
    "exec",
    "backstop",
    "observe",
    "policy",
];

fn strip_comments(src: &str) -> String {
    let src = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
    src.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level module names `src` reaches through `crate::`.
fn named(src: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = src;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::B, c, d::{E, F}}`: the first name of each top-level part.
            let (mut depth, mut part_start, mut end) = (1, true, group.len());
            for (j, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 1 => {
                        end = j;
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 1 => part_start = true,
                    c if part_start && (c.is_alphanumeric() || c == '_') => {
                        let name: String = group[j..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        out.insert(name);
                        part_start = false;
                    }
                    _ => {}
                }
            }
            rest = &group[end..];
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
        }
    }
    out
}

fn walk(dir: &Path, root: &Path, graph: &mut Graph) {
    for entry in std::fs::read_dir(dir).expect("read the source tree") {
        let path = entry.expect("a directory entry").path();
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if path.is_dir() {
            walk(&path, root, graph);
        } else if file.ends_with(".rs") && file != "tests.rs" && !file.ends_with("_tests.rs") {
            let rel = path.strip_prefix(root).expect("under src");
            let top = rel.iter().next().and_then(|c| c.to_str()).unwrap_or("");
            let top = top.trim_end_matches(".rs");
            if top == "lib" {
                continue;
            }
            let src = std::fs::read_to_string(&path).expect("read a source file");
            let names = named(&strip_comments(&src));
            let edges = graph.entry(top.to_owned()).or_default();
            edges.extend(names.into_iter().filter(|n| n != top));
        }
    }
}

fn graph() -> Graph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut g = Graph::new();
    walk(&root, &root, &mut g);
    let modules: BTreeSet<String> = g.keys().cloned().collect();
    for edges in g.values_mut() {
        edges.retain(|m| modules.contains(m));
    }
    g
}

/// Modules on a circle: those that reach themselves.
fn on_circles(g: &Graph) -> BTreeSet<String> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = g[from].iter().map(String::as_str).collect();
        while let Some(m) = todo.pop() {
            if seen.insert(m.to_owned()) {
                todo.extend(g.get(m).into_iter().flatten().map(String::as_str));
            }
        }
        seen
    };
    g.keys()
        .filter(|m| reach(m).contains(*m))
        .cloned()
        .collect()
}

#[test]
fn the_parser_sees_plain_and_grouped_imports() {
    let src = "use crate::a::B;\nuse crate::{c::D, e, f::{G, H}};\nlet x = crate::g::h();";
    let got: Vec<String> = named(src).into_iter().collect();
    assert_eq!(got, ["a", "c", "e", "f", "g"]);
    let mut g = Graph::new();
    g.insert("x".into(), ["y".into()].into());
    g.insert("y".into(), ["x".into()].into());
    g.insert("z".into(), ["x".into()].into());
    assert_eq!(on_circles(&g), ["x".to_owned(), "y".to_owned()].into());
}

#[test]
fn no_circle_among_the_runtime_modules() {
    let g = graph();
    assert!(g.contains_key("store") && g.contains_key("exec"), "{g:?}");
    let circle = on_circles(&g);
    let picture: Vec<String> = circle
        .iter()
        .map(|m| {
            format!(
                "{m} -> {:?}",
                g[m].intersection(&circle).collect::<Vec<_>>()
            )
        })
        .collect();
    assert!(circle.is_empty(), "modules on a circle: {picture:#?}");
}

#[test]
fn the_layers_below_name_no_technique_and_not_the_handle() {
    let g = graph();
    let mut up = Vec::new();
    for low in BELOW {
        for high in g.get(*low).into_iter().flatten() {
            if ABOVE.contains(&high.as_str()) {
                up.push(format!("{low} -> {high}"));
            }
        }
    }
    assert!(up.is_empty(), "arrows that run back up: {up:?}");
}

/// Every `.rs` file under `dir`, test files left out.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read the source tree") {
        let path = entry.expect("a directory entry").path();
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if path.is_dir() {
            sources(&path, out);
        } else if file.ends_with(".rs") && file != "tests.rs" && !file.ends_with("_tests.rs") {
            out.push(path);
        }
    }
}

/// The lines of `src` (comments and test blocks left out) that hold one of `words`
/// in any case.
fn lines_naming(src: &str, words: &[&str]) -> Vec<String> {
    strip_comments(src)
        .lines()
        .filter(|l| {
            let l = l.to_lowercase();
            words.iter().any(|w| l.contains(w))
        })
        .map(|l| l.trim().to_owned())
        .collect()
}

#[test]
fn the_word_check_sees_code_and_skips_comments() {
    let src = "// the outbox\nlet outbox_q = 1; /// Outbox\nfn f() {}\nuse super::super::Consume;";
    assert_eq!(
        lines_naming(src, TABLE_TECHNIQUES),
        ["let outbox_q = 1;", "use super::super::Consume;"]
    );
}

#[test]
fn the_store_names_no_technique_even_in_its_code() {
    for t in TABLE_TECHNIQUES {
        assert!(ABOVE.contains(t), "{t} must be above the store");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join("store");
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 10, "{files:?}");
    let mut found = Vec::new();
    for f in files {
        let src = std::fs::read_to_string(&f).expect("read a source file");
        for l in lines_naming(&src, TABLE_TECHNIQUES) {
            found.push(format!("{}: {l}", f.display()));
        }
    }
    assert!(found.is_empty(), "store/ names a technique: {found:#?}");
}

#[test]
fn the_values_name_no_layer_that_acts() {
    let g = graph();
    let mut up = Vec::new();
    for v in VALUES {
        for other in g.get(*v).into_iter().flatten() {
            if ABOVE.contains(&other.as_str()) || ACTING.contains(&other.as_str()) {
                up.push(format!("{v} -> {other}"));
            }
        }
    }
    assert!(up.is_empty(), "values that reach up: {up:?}");
}

#[test]
fn the_sql_kernel_names_no_policy() {
    let g = graph();
    let named = &g["sql_kernel"];
    assert!(
        !named.contains("policy") && !named.contains("store"),
        "sql_kernel -> {named:?}"
    );
}
