//! Constraint keys a person may mistype. Constraints are free-form (the
//! plan library matches on any key), so an unknown key is kept; but a key
//! one or two keystrokes from a key the planner reads (`depht` for `depth`)
//! is a mistake that would silently change nothing, and is refused naming
//! the key meant.

use std::collections::BTreeSet;

use serde_json::Value;

use super::templates::TemplateLibrary;

/// Keys the planner and the engine read besides the methods' conditions.
const ENGINE_KEYS: &[&str] = &["human_escalation"];

/// The constraint keys the built-in methods' conditions and the engine
/// read (worked out once: the library is parsed from embedded JSON).
pub fn known_keys() -> &'static BTreeSet<String> {
    static KNOWN: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    KNOWN.get_or_init(|| {
        let library = TemplateLibrary::builtin();
        let mut keys: BTreeSet<String> = library
            .methods()
            .iter()
            .flat_map(|m| m.conditions.iter().map(|c| c.key.clone()))
            .collect();
        keys.extend(ENGINE_KEYS.iter().map(|k| (*k).to_owned()));
        keys
    })
}

/// The first key of `constraints` that looks like a typo of a known key:
/// `(given, meant)`. Keys of three characters or fewer are left alone.
pub fn mistyped(constraints: &Value, known: &BTreeSet<String>) -> Option<(String, String)> {
    let map = constraints.as_object()?;
    map.keys()
        .filter(|k| k.chars().count() > 3 && !known.contains(*k))
        .find_map(|k| {
            known
                .iter()
                .find(|meant| distance(k, meant) <= 2)
                .map(|meant| (k.clone(), meant.clone()))
        })
}

/// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn near_misses_of_known_keys_are_caught_and_other_keys_kept() {
        let known = known_keys();
        assert!(known.contains("depth") && known.contains("human_escalation"));
        assert_eq!(
            mistyped(&json!({"depht": "deep"}), known),
            Some(("depht".into(), "depth".into()))
        );
        assert_eq!(
            mistyped(&json!({"human_escalaton": false}), known),
            Some(("human_escalaton".into(), "human_escalation".into()))
        );
        for fine in [
            json!({"depth": "deep"}),
            json!({"audience": "engineers", "owner": "ann"}),
            json!({"x": 1}),
            json!([1]),
        ] {
            assert_eq!(mistyped(&fine, known), None, "{fine}");
        }
    }
}
