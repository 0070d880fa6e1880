//! The pure, seeded parts of a chaos run: which missions are fed (plan
//! shapes and sizes), which replica each kill hits, and the fault pattern
//! the workers will apply to first attempts. Same seed, same values.

use serde_json::{Value, json};

use crate::worker::simulate::{Fault, SimulationConfig, fate, task_identity};

/// splitmix64: a tiny seeded generator (no dependency, stable forever).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `stream` of `seed` (different streams are independent).
    pub fn new(seed: u64, stream: u64) -> Rng {
        Rng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

/// Streams of the run's seed, one per use, so adding draws to one never
/// shifts another.
const MISSIONS: u64 = 1;
const KILLS: u64 = 2;

/// The shape of a mission's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Tasks in a line.
    Chain,
    /// A root, parallel tasks, a sink.
    Fanout,
    /// Each task after the first depends on one or two random earlier ones.
    Layered,
}

/// Skills of the generated tasks; the run's fleet covers each twice.
pub const SKILLS: [&str; 6] = [
    "research", "analysis", "writing", "coding", "review", "testing",
];

/// One mission to feed.
#[derive(Debug, Clone, PartialEq)]
pub struct MissionSpec {
    /// Its goal; unique in the run (it names the index and the seed), so a
    /// client-side retry can look for a mission created before the error.
    pub goal: String,
    /// Its plan's shape.
    pub shape: Shape,
    /// Its plan: `{"tasks": [...]}` as `POST /v1/missions` takes it.
    pub plan: Value,
}

impl MissionSpec {
    /// The plan's task keys, in plan order.
    pub fn keys(&self) -> Vec<String> {
        self.plan["tasks"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| t["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn task(key: String, skill: &str, deps: Vec<String>) -> Value {
    json!({"id": key, "title": format!("chaos {skill} step"), "task_type": skill,
           "required_skills": [skill], "depends_on": deps,
           "success_criteria": [{"description": "done", "must_pass": true}]})
}

/// The missions of a run: `count` plans of `tasks_min..=tasks_max` tasks
/// (at least 3), shapes and skills drawn from `seed`.
pub fn missions(seed: u64, count: usize, tasks_min: usize, tasks_max: usize) -> Vec<MissionSpec> {
    let mut rng = Rng::new(seed, MISSIONS);
    (0..count)
        .map(|i| {
            let n = rng.range(tasks_min.max(3), tasks_max.max(tasks_min.max(3)));
            let shape = match rng.range(0, 2) {
                0 => Shape::Chain,
                1 => Shape::Fanout,
                _ => Shape::Layered,
            };
            let keys: Vec<String> = (0..n).map(|k| format!("t{k}")).collect();
            let tasks: Vec<Value> = (0..n)
                .map(|k| {
                    let deps: Vec<usize> = match shape {
                        Shape::Chain => k.checked_sub(1).into_iter().collect(),
                        Shape::Fanout if k == 0 => vec![],
                        Shape::Fanout if k == n - 1 => (1..n - 1).collect(),
                        Shape::Fanout => vec![0],
                        Shape::Layered if k == 0 => vec![],
                        Shape::Layered => {
                            let a = rng.range(0, k - 1);
                            let b = rng.range(0, k - 1);
                            if a == b {
                                vec![a]
                            } else {
                                vec![a.min(b), a.max(b)]
                            }
                        }
                    };
                    let skill = SKILLS[rng.range(0, SKILLS.len() - 1)];
                    task(
                        keys[k].clone(),
                        skill,
                        deps.into_iter().map(|d| keys[d].clone()).collect(),
                    )
                })
                .collect();
            MissionSpec {
                goal: format!("chaos mission {i} of seed {seed}"),
                shape,
                plan: json!({ "tasks": tasks }),
            }
        })
        .collect()
}

/// The replica each kill hits, in order.
pub fn kill_victims(seed: u64, replicas: usize, kills: usize) -> Vec<usize> {
    let mut rng = Rng::new(seed, KILLS);
    (0..kills).map(|_| rng.range(0, replicas - 1)).collect()
}

/// The fault pattern of every task's first attempt: how many fail, hang,
/// answer twice and answer late, and a fingerprint of the whole pattern (a
/// rerun with the same seed prints the same one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    /// First attempts that report failure.
    pub fails: usize,
    /// First attempts that hang.
    pub hangs: usize,
    /// First attempts reported twice.
    pub duplicates: usize,
    /// First attempts reported late.
    pub lates: usize,
    /// FNV-1a of the (mission, task, fate) sequence.
    pub fingerprint: u64,
}

/// The first-attempt fault pattern the simulated workers (with
/// `roll_by_task`) will apply to `missions`.
pub fn fault_plan(sim: &SimulationConfig, missions: &[MissionSpec]) -> FaultPlan {
    let mut p = FaultPlan {
        fails: 0,
        hangs: 0,
        duplicates: 0,
        lates: 0,
        fingerprint: 0xcbf2_9ce4_8422_2325,
    };
    for m in missions {
        for key in m.keys() {
            let f = fate(sim, task_identity(&m.goal, &key, 1));
            p.fails += usize::from(f.fails);
            let code: u8 = match f.fault {
                Fault::None => 0,
                Fault::Hang => {
                    p.hangs += 1;
                    1
                }
                Fault::Duplicate => {
                    p.duplicates += 1;
                    2
                }
                Fault::Late => {
                    p.lates += 1;
                    3
                }
            };
            for b in [code | (u8::from(f.fails) << 2), 0xff] {
                p.fingerprint ^= u64::from(b);
                p.fingerprint = p.fingerprint.wrapping_mul(0x0000_0100_0000_01B3);
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::planning::PlanSpec;

    fn sim(seed: u64) -> SimulationConfig {
        SimulationConfig {
            failure_rate: 0.10,
            hang_rate: 0.05,
            duplicate_rate: 0.05,
            late_rate: 0.05,
            seed,
            roll_by_task: true,
            ..SimulationConfig::default()
        }
    }

    #[test]
    fn splitmix_matches_its_reference_values() {
        // splitmix64 from state 0: the published first outputs.
        let mut r = Rng(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn missions_are_a_function_of_the_seed() {
        let a = missions(42, 50, 5, 20);
        assert_eq!(a, missions(42, 50, 5, 20));
        assert_ne!(a, missions(43, 50, 5, 20));
        assert_eq!(a[7].goal, "chaos mission 7 of seed 42");
        let goals: BTreeSet<&str> = a.iter().map(|m| m.goal.as_str()).collect();
        assert_eq!(goals.len(), 50, "goals are unique");
        let shapes: BTreeSet<String> = a.iter().map(|m| format!("{:?}", m.shape)).collect();
        assert_eq!(shapes.len(), 3, "all shapes appear: {shapes:?}");
    }

    #[test]
    fn plans_have_the_asked_sizes_and_are_valid_dags() {
        for m in missions(7, 60, 5, 20) {
            let n = m.keys().len();
            assert!((5..=20).contains(&n), "{n}");
            // Deserialises as the API's plan type; every dependency is an
            // earlier task, so the graph is acyclic.
            let plan: PlanSpec = serde_json::from_value(m.plan.clone()).expect("plan");
            assert_eq!(plan.tasks.len(), n);
            let keys = m.keys();
            for (i, t) in m.plan["tasks"].as_array().unwrap().iter().enumerate() {
                for d in t["depends_on"].as_array().unwrap() {
                    let at = keys.iter().position(|k| k == d.as_str().unwrap()).unwrap();
                    assert!(at < i, "{} depends on a later task", m.goal);
                }
            }
        }
        // Exact sizes when min = max; the floor is 3.
        assert!(missions(1, 5, 4, 4).iter().all(|m| m.keys().len() == 4));
        assert!(missions(1, 5, 1, 1).iter().all(|m| m.keys().len() == 3));
    }

    #[test]
    fn fanout_and_chain_have_their_shape() {
        let ms = missions(3, 40, 6, 6);
        let chain = ms.iter().find(|m| m.shape == Shape::Chain).unwrap();
        let deps: Vec<Value> = chain.plan["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["depends_on"].clone())
            .collect();
        assert_eq!(deps[0], json!([]));
        assert_eq!(deps[3], json!(["t2"]));
        let fan = ms.iter().find(|m| m.shape == Shape::Fanout).unwrap();
        let tasks = fan.plan["tasks"].as_array().unwrap();
        assert_eq!(tasks[2]["depends_on"], json!(["t0"]));
        assert_eq!(tasks[5]["depends_on"], json!(["t1", "t2", "t3", "t4"]));
    }

    #[test]
    fn kill_victims_are_seeded_and_in_range() {
        let v = kill_victims(5, 3, 100);
        assert_eq!(v, kill_victims(5, 3, 100));
        assert!(v.iter().all(|r| *r < 3));
        assert_eq!(v.iter().collect::<BTreeSet<_>>().len(), 3);
        assert!(kill_victims(5, 1, 10).iter().all(|r| *r == 0));
    }

    #[test]
    fn the_fault_plan_is_reproducible_and_follows_the_rates() {
        let ms = missions(11, 300, 5, 20);
        let a = fault_plan(&sim(11), &ms);
        assert_eq!(a, fault_plan(&sim(11), &ms));
        assert_ne!(a.fingerprint, fault_plan(&sim(12), &ms).fingerprint);
        let tasks: usize = ms.iter().map(|m| m.keys().len()).sum();
        // About 10 % fail and 5 % of each fault (±30 %).
        let near = |n: usize, rate: f64| {
            let want = tasks as f64 * rate;
            (n as f64 - want).abs() < want * 0.3
        };
        assert!(near(a.fails, 0.10), "{a:?} of {tasks}");
        assert!(near(a.hangs, 0.05), "{a:?} of {tasks}");
        assert!(near(a.duplicates, 0.05), "{a:?} of {tasks}");
        assert!(near(a.lates, 0.05), "{a:?} of {tasks}");
        let quiet = fault_plan(&SimulationConfig::default(), &ms);
        assert_eq!(
            (quiet.fails, quiet.hangs, quiet.duplicates, quiet.lates),
            (0, 0, 0, 0)
        );
    }
}
