//! Whether the declared machine makes sense, decided at expansion time: every
//! edge names a state, no edge twice, stored values distinct, every state
//! reachable from the initial one (the first variant), and, when `acyclic` asks
//! for reachability, no cycle. Also computes what the expansion needs: edges as
//! indices and the "past" relation of an acyclic machine.

use crate::common::errors::{Errors, suggestion};

use super::parse::Machine;

/// The checked machine: edges as variant indices.
pub(crate) struct Graph {
    pub(crate) edges: Vec<(usize, usize)>,
    /// `past[a][b]`: `a` can be reached from `b` by one or more edges. Only
    /// when the machine is acyclic.
    pub(crate) past: Option<Vec<Vec<bool>>>,
}

/// Checks `m`, recording every problem.
pub(crate) fn check(m: &Machine, errors: &mut Errors) -> Graph {
    let names: Vec<String> = m.variants.iter().map(|v| v.ident.to_string()).collect();
    let index = |id: &syn::Ident, errors: &mut Errors| {
        let text = id.to_string();
        let found = names.iter().position(|n| *n == text);
        if found.is_none() {
            errors.at(
                id.span(),
                format!(
                    "`{}` has no state `{text}`{}",
                    m.ident,
                    suggestion(&text, names.iter().map(String::as_str))
                ),
            );
        }
        found
    };
    let mut edges = Vec::new();
    for e in &m.edges {
        let (a, b) = (index(&e.from, errors), index(&e.to, errors));
        let (Some(a), Some(b)) = (a, b) else { continue };
        if a == b {
            errors.at(
                e.to.span(),
                format!("edge `{0} -> {0}` leads nowhere; remove it", names[a]),
            );
        } else if edges.contains(&(a, b)) {
            errors.at(
                e.from.span(),
                format!("edge `{} -> {}` is declared twice", names[a], names[b]),
            );
        } else {
            edges.push((a, b));
        }
    }
    for (i, v) in m.variants.iter().enumerate() {
        if let Some(first) = m.variants[..i].iter().find(|w| w.value == v.value) {
            errors.at(
                v.value_span,
                format!(
                    "states `{}` and `{}` are both stored as `{}`; give one of them another `#[state_machine(value = \"...\")]`",
                    first.ident, v.ident, v.value
                ),
            );
        }
    }
    let n = names.len();
    let reach = closure(n, &edges);
    if n > 0 {
        for (i, v) in m.variants.iter().enumerate().skip(1) {
            if !reach[i][0] {
                errors.at(
                    v.ident.span(),
                    format!(
                        "state `{}` cannot be reached from the initial state `{}` (the first variant); add an edge into it or remove it",
                        v.ident, names[0]
                    ),
                );
            }
        }
    }
    let cyclic = (0..n).find(|&i| reach[i][i]);
    if let (Some(at), Some(i)) = (m.acyclic, cyclic) {
        errors.at(
            at,
            format!(
                "`acyclic` asks for reachability (`is_past`), but `{}` has a cycle through `{}`; remove `acyclic` or the edge closing the cycle",
                m.ident, names[i]
            ),
        );
    }
    Graph {
        edges,
        past: cyclic.is_none().then_some(reach),
    }
}

/// `r[a][b]`: `a` is reachable from `b` in one or more steps.
fn closure(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<bool>> {
    let mut r = vec![vec![false; n]; n];
    for &(a, b) in edges {
        r[b][a] = true;
    }
    // Warshall: machines are small.
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                if r[i][k] && r[k][j] {
                    r[i][j] = true;
                }
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::closure;

    #[test]
    fn reachability() {
        // 0 -> 1 -> 2, 0 -> 3
        let r = closure(4, &[(0, 1), (1, 2), (0, 3)]);
        assert!(r[2][0] && r[2][1] && r[1][0] && r[3][0]);
        assert!(!r[3][1] && !r[0][2] && !r[0][0]);
        let c = closure(2, &[(0, 1), (1, 0)]);
        assert!(c[0][0] && c[1][1]);
    }
}
