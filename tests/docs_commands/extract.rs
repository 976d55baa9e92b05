//! Where the shown commands are: the README's and `docs/*.md`'s command blocks
//! and code spans, and the examples' header comments.

use std::path::{Path, PathBuf};

use super::ROOT;

pub(crate) fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![Path::new(ROOT).join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a docs entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The shown commands of one markdown text, each with its line number.
pub(crate) fn commands_in_markdown(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<bool> = None; // Some(is a shell block)
    let mut pending = String::new();
    let mut prose = String::new();
    let mut prose_start = 1;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                None => {
                    out.extend(spans(&prose, prose_start));
                    prose.clear();
                    let lang = info.split(',').next().unwrap_or("").trim();
                    Some(matches!(lang, "sh" | "bash" | "shell" | "console"))
                }
                Some(_) => {
                    prose_start = i + 2;
                    None
                }
            };
            continue;
        }
        match fence {
            Some(true) => {
                let l = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
                let l = strip_comment(l);
                if let Some(cont) = l.strip_suffix('\\') {
                    pending.push_str(cont);
                    pending.push(' ');
                    continue;
                }
                pending.push_str(l);
                let cmd = pending.split_whitespace().collect::<Vec<_>>().join(" ");
                pending.clear();
                if !cmd.is_empty() {
                    out.push((i + 1, cmd));
                }
            }
            Some(false) => {}
            None => {
                if prose.is_empty() {
                    prose_start = i + 1;
                }
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    out.extend(spans(&prose, prose_start));
    out
}

/// Code spans of prose that look like commands (they may wrap across lines).
pub(crate) fn spans(prose: &str, first_line: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut rest = prose;
    let mut offset = 0;
    while let Some(a) = rest.find('`') {
        let after = &rest[a + 1..];
        let Some(b) = after.find('`') else { break };
        let span = after[..b].split_whitespace().collect::<Vec<_>>().join(" ");
        let line = first_line + prose[..offset + a].matches('\n').count();
        if is_command(&span) {
            out.push((line, span));
        }
        offset += a + 1 + b + 1;
        rest = &after[b + 1..];
    }
    out
}

pub(crate) fn is_command(s: &str) -> bool {
    let words: Vec<&str> = s.split(' ').collect();
    let first = words.iter().find(|w| !is_assignment(w));
    first.is_some_and(|w| *w == "cargo") && words.len() > 1
}

pub(crate) fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

pub(crate) fn strip_comment(l: &str) -> &str {
    match l.find(" #") {
        Some(i) => l[..i].trim_end(),
        None if l.starts_with('#') => "",
        None => l.trim_end(),
    }
}

/// The commands of the `text` blocks in an example's `//!` header.
pub(crate) fn commands_in_example(src: &str) -> Vec<(usize, String)> {
    let header: String = src
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    for (i, line) in header.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        let l = strip_comment(line.trim());
        if let Some(cont) = l.strip_suffix('\\') {
            pending.push_str(cont);
            pending.push(' ');
            continue;
        }
        pending.push_str(l);
        let cmd = pending.split_whitespace().collect::<Vec<_>>().join(" ");
        pending.clear();
        if is_command(&cmd) {
            out.push((i + 1, cmd));
        }
    }
    out
}
