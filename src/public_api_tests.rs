//! Pins the facade's public names: the crate root is explicit re-exports only
//! (no glob), so its `pub use` statements are the whole list of names at
//! `idem::…`. Adding or removing one fails this test until `public-api.txt`
//! (one name a line, sorted) says so too: a change to the surface is then a
//! deliberate, reviewed line in the diff.

/// The names `pub use` statements of `src` bring in (after `as`, when renamed).
fn reexported(src: &str) -> Vec<String> {
    let code: String = src
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub use ") {
        let stmt = &rest[at + "pub use ".len()..];
        let end = stmt.find(';').expect("a `pub use` ends with `;`");
        let path = &stmt[..end];
        let items = match path.find('{') {
            Some(open) => &path[open + 1..path.rfind('}').expect("a closed group")],
            None => path.rsplit("::").next().unwrap_or(path),
        };
        for item in items.split(',') {
            let item = item.split(" as ").last().unwrap_or("").trim();
            if !item.is_empty() {
                names.push(item.to_owned());
            }
        }
        rest = &stmt[end..];
    }
    names.sort();
    names
}

#[test]
fn the_public_names_are_the_pinned_list() {
    let actual = reexported(include_str!("lib.rs"));
    let pinned: Vec<String> = include_str!("../public-api.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    // Sorted both, so a name in two namespaces (`StateMachine`: the trait and
    // the derive) counts twice and losing one of them shows too.
    let added: Vec<_> = actual.iter().filter(|n| !pinned.contains(n)).collect();
    let removed: Vec<_> = pinned.iter().filter(|n| !actual.contains(n)).collect();
    assert!(
        actual == pinned,
        "the facade's public names changed: added {added:?}, removed {removed:?}; \
         update public-api.txt if the change is deliberate"
    );
}

#[test]
fn the_parser_sees_groups_renames_and_single_paths() {
    let src = "pub use a::{B, c as D};\n// pub use x::Hidden;\npub use e::f;\n";
    assert_eq!(reexported(src), ["B", "D", "f"]);
}
