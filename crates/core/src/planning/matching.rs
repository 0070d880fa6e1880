//! Lexical matching of a free-text goal against the root methods of the library.
//!
//! Scores are TF-IDF cosine similarities in `[0, 1]` over simple tokens: lowercase,
//! split on non-alphanumerics, minus a small stopword list, crudely stemmed so that
//! "reports"/"report" and "reviewing"/"reviewed"/"review" meet. Everything is kept in
//! `BTreeMap`s and sorted vectors so the same input always gives the same output.
//!
//! Why TF-IDF cosine rather than BM25: the documents are a method's name, description
//! and keywords, all short and of similar length, so BM25's length normalisation and
//! term saturation buy little. Cosine scores are bounded in `[0, 1]` and barely move
//! when saved routines are added, so one fixed threshold keeps its meaning; BM25
//! scores are unbounded and grow with the library's IDF spread, so the threshold
//! would need re-calibrating whenever a workspace saves a routine.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Score a method must exceed to be chosen over the generic fallback.
///
/// Calibrated by `calibration_supports_default_threshold` in the template tests: five
/// or more realistic goals per mission shape (41 in all) and 20 goals no shape fits.
/// With the built-in library every positive goal scores at least 0.172 for the right
/// shape, while goals sharing only an incidental word with a shape ("Measure the
/// living room for a new sofa" meets "go live", "Learn to play the guitar" meets
/// "lessons learned") score at most 0.136, and goals with no shared word score 0.
/// 0.15 sits in that gap, a little nearer the negatives: a near-miss still gets a
/// shaped plan that validation checks, while a false match on an unrelated goal would
/// skip the LLM planner. The test fails if either side crosses the threshold.
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
    /// The best-scoring method, if its score is above the threshold.
    pub best: Option<TemplateScore>,
    /// The second-ranked method, if it scored above zero (whether or not `best` is set).
    #[serde(default)]
    pub runner_up: Option<TemplateScore>,
    /// Every candidate method whose conditions hold, highest score first, ties by name.
    pub scores: Vec<TemplateScore>,
    /// Root methods left out because their conditions do not hold, by name.
    #[serde(default)]
    pub skipped: Vec<String>,
    /// The (at most) three closest methods with the goal's words each
    /// matched: why the plan is shaped as it is, for a person to follow.
    #[serde(default)]
    pub candidates: Vec<Candidate>,
}

/// One of the closest methods to a goal, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Method name.
    pub method: String,
    /// Its similarity in `[0, 1]`.
    pub score: f64,
    /// The goal's words found in its name, description or keywords.
    pub matched_words: Vec<String>,
}

impl MatchOutcome {
    /// Picks best and runner-up from sorted `scores`; a zero score never counts.
    pub fn from_scores(
        scores: Vec<TemplateScore>,
        mut skipped: Vec<String>,
        threshold: f64,
    ) -> MatchOutcome {
        let best = scores
            .first()
            .filter(|s| s.score > threshold && s.score > 0.0)
            .cloned();
        let runner_up = scores.get(1).filter(|s| s.score > 0.0).cloned();
        skipped.sort();
        MatchOutcome {
            best,
            runner_up,
            scores,
            skipped,
            candidates: Vec::new(),
        }
    }

    /// The `k` methods closest to the goal, best first, leaving out those
    /// that share no word with it: the few a model is shown as examples,
    /// rather than the whole catalogue.
    pub fn closest(&self, k: usize) -> Vec<&TemplateScore> {
        let mut close: Vec<&TemplateScore> = self.scores.iter().filter(|s| s.score > 0.0).collect();
        // `scores` is sorted already; sorting again keeps this true of any outcome.
        close.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.template.cmp(&b.template))
        });
        close.truncate(k);
        close
    }
}

/// Words too common to say anything about the kind of work wanted.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "but", "by", "can", "could", "do", "does", "during", "each", "every", "for", "from",
    "get", "got", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me",
    "my", "need", "not", "of", "on", "onto", "or", "other", "our", "out", "please", "should", "so",
    "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "to", "until", "up", "us", "use", "using", "very", "was", "we", "were",
    "what", "when", "where", "which", "while", "who", "why", "will", "with", "would", "you",
    "your",
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

/// Up to `limit` distinctive words of `text`, most frequent first, then in order of appearance.
///
/// Words are lowercased and stopword-free but not stemmed, so they read as keywords;
/// variants of one stem ("report", "reports") count together under the first seen.
/// One-letter words and plain numbers say nothing about the kind of work and are dropped.
pub fn keywords(text: &str, limit: usize) -> Vec<String> {
    // stem -> (count, first position, first surface form)
    let mut seen: BTreeMap<String, (usize, usize, String)> = BTreeMap::new();
    let words = text
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() > 1 && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !STOPWORDS.contains(&w.as_str()));
    for (position, word) in words.enumerate() {
        seen.entry(stem(&word))
            .and_modify(|e| e.0 += 1)
            .or_insert((1, position, word));
    }
    let mut ranked: Vec<(usize, usize, String)> = seen.into_values().collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked.into_iter().take(limit).map(|(_, _, w)| w).collect()
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

    /// The words of `query` (lowercase, as written) that document `name`
    /// contains after stemming, each once, in the query's order.
    pub fn shared_words(&self, query: &str, name: &str) -> Vec<String> {
        let Some(doc) = self
            .names
            .iter()
            .position(|n| n == name)
            .and_then(|i| self.vectors.get(i))
        else {
            return Vec::new();
        };
        let mut words: Vec<String> = Vec::new();
        for w in query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let w = w.to_lowercase();
            if STOPWORDS.contains(&w.as_str()) || words.contains(&w) {
                continue;
            }
            if doc.contains_key(&stem(&w)) {
                words.push(w);
            }
        }
        words
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
    fn the_closest_methods_are_the_best_few_that_share_a_word() {
        let score = |template: &str, score: f64| TemplateScore {
            template: template.into(),
            score,
        };
        let outcome = MatchOutcome::from_scores(
            vec![
                score("b", 0.1),
                score("a", 0.4),
                score("c", 0.1),
                score("z", 0.0),
            ],
            vec![],
            0.5,
        );
        let names = |k| -> Vec<&str> {
            outcome
                .closest(k)
                .iter()
                .map(|s| s.template.as_str())
                .collect()
        };
        assert_eq!(names(2), ["a", "b"]);
        assert_eq!(names(10), ["a", "b", "c"]);
        assert!(names(0).is_empty());
    }

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
    fn keywords_rank_by_frequency_then_position() {
        assert_eq!(
            keywords(
                "Write the Q3 report on EV batteries; reports on batteries, and a report summary",
                4
            ),
            ["report", "batteries", "write", "q3"]
        );
        assert!(keywords("the and of 2024 a", 5).is_empty());
        assert_eq!(keywords("alpha beta gamma", 2), ["alpha", "beta"]);
    }

    #[test]
    fn outcome_records_best_and_runner_up() {
        let score = |t: &str, s: f64| TemplateScore {
            template: t.to_owned(),
            score: s,
        };
        let o = MatchOutcome::from_scores(
            vec![score("a", 0.5), score("b", 0.2), score("c", 0.0)],
            vec!["z".into(), "y".into()],
            0.3,
        );
        assert_eq!(o.best, Some(score("a", 0.5)));
        assert_eq!(o.runner_up, Some(score("b", 0.2)));
        assert_eq!(o.skipped, ["y", "z"]);
        let o = MatchOutcome::from_scores(vec![score("a", 0.2), score("b", 0.0)], vec![], 0.3);
        assert_eq!(o.best, None);
        assert_eq!(o.runner_up, None);
        let value = serde_json::to_value(&o).unwrap();
        assert!(value["best"].is_null() && value["scores"].is_array());
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
