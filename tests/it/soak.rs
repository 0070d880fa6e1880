//! `coordinator soak` as a real process: a short run whose every mission
//! ends, whose subscribers all stay connected and whose audit is clean. The
//! growth verdict itself is unit-tested (`soak::windows`); here its limits
//! are wide, since a CI machine running every other test at once makes
//! latencies swing between windows for reasons of its own.

use std::time::Duration;

use crate::chaos::coordinator;

#[tokio::test]
async fn a_short_soak_ends_every_mission_keeps_its_subscribers_and_audits_clean() {
    let run = coordinator(
        &[
            "soak",
            "--duration-secs",
            "40",
            "--window-secs",
            "10",
            "--replicas",
            "2",
            "--subscribers",
            "100",
            "--seed",
            "5",
            "--max-latency-growth",
            "20",
            "--max-rss-growth",
            "3",
        ],
        Duration::from_secs(400),
    )
    .await;
    let context = format!("stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert_eq!(run.code, 0, "{context}");
    assert_eq!(run.figure("windows"), 4, "{context}");
    assert_eq!(run.figure("missions"), 80, "{context}");
    assert_eq!(run.figure("created"), 80, "{context}");
    assert_eq!(run.figure("subscribers_last"), 100, "{context}");
    // Every kind of person's action happened.
    for done in ["approved", "replanned", "cancelled", "reviewed"] {
        assert!(run.figure(done) > 0, "{done}: {context}");
    }
    let figures = run.figures();
    assert_eq!(figures["drained"], "true", "{context}");
    assert_eq!(figures["grew"], "none", "{context}");
    assert!(run.stdout.contains("PASS"), "{context}");
    // The windows measured something.
    let rss: f64 = figures["rss_mib_last"].parse().expect("a number");
    assert!(rss > 0.0, "{context}");
}
