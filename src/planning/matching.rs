//! Lexical matching of a free-text goal against template descriptions.
//!
//! Scores are TF-IDF cosine similarities in `[0, 1]` over simple tokens: lowercase,
//! split on non-alphanumerics, minus a small stopword list, crudely stemmed so that
//! "reports"/"report" and "reviewing"/"reviewed"/"review" meet. Everything is kept in
//! `BTreeMap`s and sorted vectors so the same input always gives the same output.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Score a template must exceed to be chosen over the generic fallback.
///
/// Chosen from the calibration goals in the template tests: with the built-in library,
/// every goal that plainly names a kind of work scores at least 0.188 for the right
/// template, goals with no word in common with any template score 0, and goals sharing
/// one incidental word with a template ("Fix the leaking kitchen tap") score at most
/// 0.131. 0.15 sits in that gap; the calibration test fails if either side crosses it.
pub const DEFAULT_MATCH_THRESHOLD: f64 = 0.15;

/// Weight of a query word that occurs in no template.
///
/// Goals are mostly about a topic ("solid-state batteries", "Postgres") that no template
/// mentions; giving such words full IDF weight would drown the few words that say
/// what kind of work is wanted. A small weight still lets them dilute the score.
const UNSEEN_TERM_WEIGHT: f64 = 0.35;

/// One template's similarity to a goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateScore {
    /// Template name.
    pub template: String,
    /// Cosine similarity in `[0, 1]`.
    pub score: f64,
}

/// The result of matching a goal against a template library.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchOutcome {
    /// The best-scoring template, if its score is above the threshold.
    pub best: Option<TemplateScore>,
    /// Every candidate template, highest score first, ties by name.
    pub scores: Vec<TemplateScore>,
}

/// Words too common to say anything about the kind of work wanted.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "but", "by", "can", "could", "do", "does", "for", "from", "get", "got", "has", "have", "how",
    "i", "if", "in", "into", "is", "it", "its", "just", "me", "my", "need", "not", "of", "on",
    "onto", "or", "our", "please", "should", "so", "some", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "those", "to", "up", "us", "use", "using", "was",
    "we", "were", "what", "when", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// Splits text into lowercase, stopword-free, stemmed tokens.
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// Crude suffix stripping: plurals, `-ing`, `-ed`, a final `e`, and `-ize` vs `-ise`.
///
/// It only has to map a word and its usual variants to the same key, not produce
/// real words: "write", "writes" and "writing" all become "writ".
pub fn stem(word: &str) -> String {
    let mut w = word.to_owned();
    // Suffix checks are on ASCII endings, so byte truncation stays on char boundaries.
    if w.len() > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if w.len() > 3
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
    {
        w.pop();
    }

    if w.len() > 5 && w.ends_with("ing") {
        w.truncate(w.len() - 3);
        undouble(&mut w);
    } else if w.len() > 4 && w.ends_with("ed") && !w.ends_with("eed") {
        w.truncate(w.len() - 2);
        undouble(&mut w);
    }

    if w.ends_with("ysis") {
        // "analysis" meets "analyse"/"analysing".
        w.truncate(w.len() - 2);
    } else if w.len() > 3 && w.ends_with('e') && !w.ends_with("ee") {
        w.pop();
    }
    if w.ends_with("yz") || w.ends_with("iz") {
        // American "-ize" meets British "-ise".
        w.pop();
        w.push('s');
    }
    w
}

/// Turns "runn" (from "running") back into "run"; l, s, z and f doubles are usually real.
fn undouble(w: &mut String) {
    let bytes = w.as_bytes();
    if let [.., a, b] = bytes
        && a == b
        && a.is_ascii_lowercase()
        && !matches!(
            a,
            b'a' | b'e' | b'i' | b'o' | b'u' | b'l' | b's' | b'z' | b'f'
        )
    {
        w.pop();
    }
}

/// Counts of each token.
fn term_counts(tokens: Vec<String>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for t in tokens {
        *counts.entry(t).or_insert(0) += 1;
    }
    counts
}

/// Sublinear term frequency, so repeating a word does not dominate the score.
fn tf(count: usize) -> f64 {
    1.0 + (count as f64).ln()
}

/// A TF-IDF index over a small set of named documents.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LexicalIndex {
    names: Vec<String>,
    /// Unit-length TF-IDF vectors, one per name.
    vectors: Vec<BTreeMap<String, f64>>,
    idf: BTreeMap<String, f64>,
}

impl LexicalIndex {
    /// Indexes `(name, text)` documents.
    pub fn new<I, N, T>(docs: I) -> Self
    where
        I: IntoIterator<Item = (N, T)>,
        N: Into<String>,
        T: AsRef<str>,
    {
        let mut names = Vec::new();
        let mut counts = Vec::new();
        for (name, text) in docs {
            names.push(name.into());
            counts.push(term_counts(tokenize(text.as_ref())));
        }

        let mut df: BTreeMap<&str, usize> = BTreeMap::new();
        for c in &counts {
            for term in c.keys() {
                *df.entry(term.as_str()).or_insert(0) += 1;
            }
        }
        // Smoothed IDF: a word in every document still counts a little.
        let n = counts.len() as f64;
        let idf: BTreeMap<String, f64> = df
            .into_iter()
            .map(|(term, d)| (term.to_owned(), ((1.0 + n) / (1.0 + d as f64)).ln() + 1.0))
            .collect();

        let vectors = counts
            .iter()
            .map(|c| {
                let weighted: BTreeMap<String, f64> = c
                    .iter()
                    .map(|(term, &k)| (term.clone(), tf(k) * idf.get(term).copied().unwrap_or(0.0)))
                    .collect();
                normalize(weighted)
            })
            .collect();

        LexicalIndex {
            names,
            vectors,
            idf,
        }
    }

    /// Cosine similarity of `query` to every document, highest first, ties by name.
    pub fn scores(&self, query: &str) -> Vec<TemplateScore> {
        let query_vec = normalize(
            term_counts(tokenize(query))
                .into_iter()
                .map(|(term, k)| {
                    let weight = self.idf.get(&term).copied().unwrap_or(UNSEEN_TERM_WEIGHT);
                    (term, tf(k) * weight)
                })
                .collect(),
        );

        let mut scores: Vec<TemplateScore> = self
            .names
            .iter()
            .zip(&self.vectors)
            .map(|(name, doc)| {
                let dot: f64 = query_vec
                    .iter()
                    .filter_map(|(term, q)| doc.get(term).map(|d| q * d))
                    .sum();
                // An empty float sum is -0.0, which would serialize as "-0.0"; rounding
                // error can push a perfect match a hair past 1.
                let score = if dot > 0.0 { dot.min(1.0) } else { 0.0 };
                TemplateScore {
                    template: name.clone(),
                    score,
                }
            })
            .collect();
        scores.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.template.cmp(&b.template))
        });
        scores
    }
}

/// Scales a vector to unit length; the zero vector stays zero.
fn normalize(mut v: BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    let norm = v.values().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        for x in v.values_mut() {
            *x /= norm;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_common_variants_together() {
        let groups: &[&[&str]] = &[
            &["report", "reports", "reporting", "reported"],
            &["review", "reviews", "reviewing", "reviewed"],
            &["write", "writes", "writing"],
            &["compare", "compares", "comparing", "compared"],
            &["test", "tests", "testing", "tested"],
            &["study", "studies"],
            &[
                "analyse",
                "analyze",
                "analysing",
                "analyzing",
                "analysis",
                "analyses",
            ],
            &["summarize", "summarise", "summarizing"],
            &["run", "running"],
            &["embedded", "embedding"],
            &["implement", "implements", "implementing", "implemented"],
            &["option", "options"],
        ];
        for group in groups {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| *s == stems[0]),
                "{group:?} -> {stems:?}"
            );
        }
        // Words ending in -ss, -us, -is are not plurals.
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("status"), "status");
    }

    #[test]
    fn tokenize_lowercases_splits_and_drops_stopwords() {
        assert_eq!(
            tokenize("Research the state-of-the-art in LLMs, and write a Report!"),
            ["research", "stat", "art", "llm", "writ", "report"]
        );
        assert!(tokenize("  the and of  ").is_empty());
        assert!(tokenize("").is_empty());
    }

    #[test]
    fn tokenize_handles_non_ascii() {
        assert_eq!(tokenize("Café naïve ÉTUDES"), ["café", "naïv", "étud"]);
    }

    fn index() -> LexicalIndex {
        LexicalIndex::new([
            ("cats", "cats kittens purring whiskers"),
            ("dogs", "dogs puppies barking leashes"),
            ("pets", "cats dogs feeding pets"),
        ])
    }

    #[test]
    fn scores_are_sorted_bounded_and_deterministic() {
        let idx = index();
        let s = idx.scores("my kitten keeps purring");
        assert_eq!(s[0].template, "cats");
        assert!(s.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(s.iter().all(|x| (0.0..=1.0).contains(&x.score)));
        assert_eq!(s, idx.scores("my kitten keeps purring"));
    }

    #[test]
    fn identical_text_scores_one_and_unrelated_scores_zero() {
        let idx = index();
        let s = idx.scores("dogs puppies barking leashes");
        assert_eq!(s[0].template, "dogs");
        assert!((s[0].score - 1.0).abs() < 1e-9);
        let s = idx.scores("asdf qwerty");
        // Positive zero, so JSON shows 0.0 rather than -0.0.
        assert!(
            s.iter()
                .all(|x| x.score == 0.0 && x.score.is_sign_positive())
        );
        assert_eq!(
            serde_json::to_string(&s[0]).unwrap(),
            r#"{"template":"cats","score":0.0}"#
        );
        // Zero scores tie, so they come out in name order.
        let names: Vec<&str> = s.iter().map(|x| x.template.as_str()).collect();
        assert_eq!(names, ["cats", "dogs", "pets"]);
    }

    #[test]
    fn empty_index_and_empty_query_are_harmless() {
        assert!(
            LexicalIndex::new(Vec::<(String, String)>::new())
                .scores("x")
                .is_empty()
        );
        assert!(index().scores("").iter().all(|x| x.score == 0.0));
    }
}
