//! Organisation specs (MOISE+): who may, must and must not do which work.
//!
//! A workspace may upload one spec with the three MOISE+ dimensions:
//!
//! - **structural**: roles (with a cardinality and optional `extends`
//!   parent), groups of roles, and links between roles (authority,
//!   communication, acquaintance);
//! - **functional**: missions made of goals, each goal naming the plan steps
//!   it covers — task types or task keys, matched case-insensitively;
//! - **deontic**: norms `role modality target`, the modality being
//!   `obligation`, `permission` or `prohibition`, the target a goal or a
//!   mission (all of its goals).
//!
//! Everything here is pure. [`OrgSpec::parse`] validates a document and
//! reports every problem with a stable code; [`OrgSpec::verdict`] tells the
//! scorer what the spec says of one role for one task:
//!
//! - a task no goal covers is unconstrained for every role;
//! - norms of a role apply to the roles that extend it, too;
//! - prohibition beats obligation beats permission (a specialised role may
//!   be barred from what its parent must do);
//! - a role with no norm on a covered task gets the spec's
//!   `default_modality`: `permission` (open, the default) or `prohibition`
//!   (closed: only roles a norm names may do covered work).
//!
//! The scorer never gives a task to a prohibited role and prefers obliged
//! roles over the rest (the service's `assignment`); cardinality bounds how
//! many live agents may hold a role ([`OrgSpec::room_for`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest spec accepted, in bytes of JSON (it travels with every dispatch).
pub const MAX_SPEC_BYTES: usize = 64 * 1024;
/// Most entries of any one list (roles, groups, links, missions, goals, norms).
pub const MAX_ENTRIES: usize = 500;

/// A validated organisation spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrgSpec {
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Roles agents can play (matched against an agent's `role`).
    pub roles: Vec<RoleSpec>,
    /// Groups of roles.
    #[serde(default)]
    pub groups: Vec<GroupSpec>,
    /// Links between roles.
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    /// Missions (the functional dimension): goals and the plan steps they cover.
    #[serde(default)]
    pub missions: Vec<MissionSpec>,
    /// Norms (the deontic dimension).
    #[serde(default)]
    pub norms: Vec<NormSpec>,
    /// What a role with no norm on a covered task may do.
    #[serde(default)]
    pub default_modality: DefaultModality,
}

/// A role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// Id, matched case-insensitively against agents' roles.
    pub id: String,
    /// What the role is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A role this one specialises: its norms apply to this one too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extends: Option<String>,
    /// How many live agents may hold the role.
    #[serde(default)]
    pub cardinality: Cardinality,
    /// The agent tools the role may call: tool names, `group:<group>`
    /// (`group:communication`, …) or `*`. Absent: every agent tool (roles
    /// extending this one inherit its grants). Norms targeting `tool:<name>`
    /// or `tool:group:<group>` refine it ([`OrgSpec::tool_access`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

/// Bounds on how many live agents hold a role.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Cardinality {
    /// Fewest wanted (reported when not met; never enforced by refusing).
    #[serde(default)]
    pub min: u32,
    /// Most allowed (registration and contractor hiring refuse beyond it); none is unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u32>,
}

/// A group of roles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// Id.
    pub id: String,
    /// Roles in the group.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Groups inside this one.
    #[serde(default)]
    pub subgroups: Vec<String>,
}

/// A link between two roles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// From role.
    pub from: String,
    /// To role.
    pub to: String,
    /// `authority`, `communication` or `acquaintance`.
    pub kind: LinkKind,
}

/// Kinds of link (MOISE+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// `from` may direct `to`.
    Authority,
    /// `from` may message `to`.
    Communication,
    /// `from` knows `to` exists.
    Acquaintance,
}

/// A mission of the functional dimension (not a coordinator mission).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MissionSpec {
    /// Id.
    pub id: String,
    /// What it achieves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its goals.
    pub goals: Vec<GoalSpec>,
}

/// A goal and the plan steps that serve it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalSpec {
    /// Id, unique across missions.
    pub id: String,
    /// What it achieves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Task types or task keys it covers.
    pub plan: Vec<String>,
}

/// A norm: `role modality target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NormSpec {
    /// Id.
    pub id: String,
    /// The role it binds (and roles extending it).
    pub role: String,
    /// Obligation, permission or prohibition.
    pub modality: Modality,
    /// A goal id or a mission id.
    pub target: String,
}

/// Deontic modalities.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Modality {
    /// May do it.
    Permission,
    /// Must do it (preferred by the scorer).
    Obligation,
    /// Must not do it (never assigned).
    Prohibition,
}

/// The modality of roles no norm names, on covered tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DefaultModality {
    /// Open world: anyone may.
    #[default]
    Permission,
    /// Closed world: only roles a norm permits or obliges.
    Prohibition,
}

/// What the spec says of one agent for one task; the scorer's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Deontic {
    /// No spec, or no goal covers the task.
    #[default]
    Unconstrained,
    /// Permitted (by a norm or the open default).
    Permitted,
    /// Obliged: preferred over every other eligible agent.
    Obliged,
    /// Prohibited: never assigned.
    Prohibited,
}

/// One validation problem.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SpecProblem {
    /// Stable code (`duplicate_id`, `unknown_role`, ...).
    pub code: &'static str,
    /// Where, as a JSON-ish path (`norms[2].role`).
    pub path: String,
    /// For people.
    pub message: String,
}

/// Records an `unknown_role` problem when `role` is not among `roles` (case-folded ids).
fn unknown_role(roles: &BTreeSet<String>, path: String, role: &str, out: &mut Vec<SpecProblem>) {
    if !roles.contains(&key(role)) {
        out.push(problem(
            "unknown_role",
            path,
            format!("role '{role}' is not defined in roles"),
        ));
    }
}

fn problem(code: &'static str, path: impl Into<String>, message: String) -> SpecProblem {
    SpecProblem {
        code,
        path: path.into(),
        message,
    }
}

fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && id.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

/// The case-insensitive form under which roles, goals and task types are compared.
pub fn key(s: &str) -> String {
    s.to_ascii_lowercase()
}

impl OrgSpec {
    /// Parses and validates a document; every problem is reported.
    pub fn parse(doc: &Value) -> Result<OrgSpec, Vec<SpecProblem>> {
        let size = doc.to_string().len();
        if size > MAX_SPEC_BYTES {
            return Err(vec![problem(
                "spec_too_large",
                "",
                format!("the spec is {size} bytes of JSON; at most {MAX_SPEC_BYTES} are allowed"),
            )]);
        }
        let spec: OrgSpec = serde_json::from_value(doc.clone())
            .map_err(|e| vec![problem("spec_malformed", "", e.to_string())])?;
        let problems = spec.problems();
        if problems.is_empty() {
            Ok(spec)
        } else {
            Err(problems)
        }
    }

    /// Every structural problem of an already-deserialised spec.
    pub fn problems(&self) -> Vec<SpecProblem> {
        let mut out = Vec::new();
        self.size_problems(&mut out);
        self.id_problems(&mut out);
        self.role_problems(&mut out);
        self.group_problems(&mut out);
        self.link_problems(&mut out);
        self.mission_problems(&mut out);
        self.norm_problems(&mut out);
        self.norm_conflicts(&mut out);
        out
    }

    /// Case-folded ids of the defined roles.
    fn role_keys(&self) -> BTreeSet<String> {
        self.roles.iter().map(|r| key(&r.id)).collect()
    }

    /// No roles at all, or more entries than allowed.
    fn size_problems(&self, out: &mut Vec<SpecProblem>) {
        if self.roles.is_empty() {
            out.push(problem(
                "no_roles",
                "roles",
                "a spec needs at least one role".into(),
            ));
        }
        for (list, n) in [
            ("roles", self.roles.len()),
            ("groups", self.groups.len()),
            ("links", self.links.len()),
            ("missions", self.missions.len()),
            ("norms", self.norms.len()),
            (
                "goals",
                self.missions.iter().map(|m| m.goals.len()).sum::<usize>(),
            ),
        ] {
            if n > MAX_ENTRIES {
                out.push(problem(
                    "too_many_entries",
                    list,
                    format!("{n} {list}; at most {MAX_ENTRIES} are allowed"),
                ));
            }
        }
    }

    /// Ids: well formed and unique within their kind.
    fn id_problems(&self, out: &mut Vec<SpecProblem>) {
        // Ids: well formed and unique within their kind (goals and missions
        // share one namespace, since norms target either).
        let ids = |kind: &str, entries: Vec<(String, &str)>, out: &mut Vec<SpecProblem>| {
            let mut seen = BTreeSet::new();
            for (path, id) in entries {
                if !valid_id(id) {
                    out.push(problem(
                        "invalid_id",
                        path.clone(),
                        format!("{kind} id '{id}' must be 1–64 letters, digits, '.', '_', ':' or '-', starting with a letter or digit"),
                    ));
                }
                if !seen.insert(key(id)) {
                    out.push(problem(
                        "duplicate_id",
                        path,
                        format!("{kind} id '{id}' is used twice"),
                    ));
                }
            }
        };
        ids(
            "role",
            self.roles
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("roles[{i}].id"), r.id.as_str()))
                .collect(),
            out,
        );
        ids(
            "group",
            self.groups
                .iter()
                .enumerate()
                .map(|(i, g)| (format!("groups[{i}].id"), g.id.as_str()))
                .collect(),
            out,
        );
        let mut functional: Vec<(String, &str)> = Vec::new();
        for (i, m) in self.missions.iter().enumerate() {
            functional.push((format!("missions[{i}].id"), m.id.as_str()));
            for (j, g) in m.goals.iter().enumerate() {
                functional.push((format!("missions[{i}].goals[{j}].id"), g.id.as_str()));
            }
        }
        ids("mission or goal", functional, out);
        ids(
            "norm",
            self.norms
                .iter()
                .enumerate()
                .map(|(i, n)| (format!("norms[{i}].id"), n.id.as_str()))
                .collect(),
            out,
        );
    }

    /// Roles: known parents, sane cardinality, no inheritance cycle.
    fn role_problems(&self, out: &mut Vec<SpecProblem>) {
        let roles = self.role_keys();
        let known_role = |path: String, role: &str, out: &mut Vec<SpecProblem>| {
            unknown_role(&roles, path, role, out);
        };
        for (i, r) in self.roles.iter().enumerate() {
            if let Some(parent) = &r.extends {
                known_role(format!("roles[{i}].extends"), parent, out);
            }
            if let Some(max) = r.cardinality.max
                && r.cardinality.min > max
            {
                out.push(problem(
                    "cardinality_invalid",
                    format!("roles[{i}].cardinality"),
                    format!(
                        "role '{}': min {} is above max {max}",
                        r.id, r.cardinality.min
                    ),
                ));
            }
        }
        if let Some(role) = self.extends_cycle() {
            out.push(problem(
                "role_cycle",
                "roles",
                format!("role '{role}' extends itself through its parents"),
            ));
        }
    }

    /// Groups: known roles and subgroups, no containment cycle.
    fn group_problems(&self, out: &mut Vec<SpecProblem>) {
        let roles = self.role_keys();
        let known_role = |path: String, role: &str, out: &mut Vec<SpecProblem>| {
            unknown_role(&roles, path, role, out);
        };
        let groups: BTreeSet<String> = self.groups.iter().map(|g| key(&g.id)).collect();
        for (i, g) in self.groups.iter().enumerate() {
            for (j, r) in g.roles.iter().enumerate() {
                known_role(format!("groups[{i}].roles[{j}]"), r, out);
            }
            for (j, s) in g.subgroups.iter().enumerate() {
                if !groups.contains(&key(s)) {
                    out.push(problem(
                        "unknown_group",
                        format!("groups[{i}].subgroups[{j}]"),
                        format!("group '{s}' is not defined in groups"),
                    ));
                }
            }
        }
        if let Some(group) = self.group_cycle() {
            out.push(problem(
                "group_cycle",
                "groups",
                format!("group '{group}' contains itself through its subgroups"),
            ));
        }
    }

    /// Links: both ends are defined roles.
    fn link_problems(&self, out: &mut Vec<SpecProblem>) {
        let roles = self.role_keys();
        let known_role = |path: String, role: &str, out: &mut Vec<SpecProblem>| {
            unknown_role(&roles, path, role, out);
        };
        for (i, l) in self.links.iter().enumerate() {
            known_role(format!("links[{i}].from"), &l.from, out);
            known_role(format!("links[{i}].to"), &l.to, out);
        }
    }

    /// Missions: each has goals, each goal a plan.
    fn mission_problems(&self, out: &mut Vec<SpecProblem>) {
        for (i, m) in self.missions.iter().enumerate() {
            if m.goals.is_empty() {
                out.push(problem(
                    "empty_mission",
                    format!("missions[{i}].goals"),
                    format!("mission '{}' has no goals", m.id),
                ));
            }
            for (j, g) in m.goals.iter().enumerate() {
                if g.plan.is_empty() || g.plan.iter().any(|s| s.trim().is_empty()) {
                    out.push(problem(
                        "empty_plan",
                        format!("missions[{i}].goals[{j}].plan"),
                        format!(
                            "goal '{}' must name at least one task type or key, none blank",
                            g.id
                        ),
                    ));
                }
            }
        }
    }

    /// Norms: a defined role and a target that is a mission or goal.
    fn norm_problems(&self, out: &mut Vec<SpecProblem>) {
        let roles = self.role_keys();
        let known_role = |path: String, role: &str, out: &mut Vec<SpecProblem>| {
            unknown_role(&roles, path, role, out);
        };
        let targets: BTreeSet<String> = self
            .missions
            .iter()
            .flat_map(|m| std::iter::once(key(&m.id)).chain(m.goals.iter().map(|g| key(&g.id))))
            .collect();
        for (i, n) in self.norms.iter().enumerate() {
            known_role(format!("norms[{i}].role"), &n.role, out);
            if let Some(tool) = tool_target(&n.target) {
                if tool.trim().is_empty() {
                    out.push(problem(
                        "unknown_target",
                        format!("norms[{i}].target"),
                        format!("norm '{}' targets no tool ('tool:' needs a name)", n.id),
                    ));
                }
                continue;
            }
            if !targets.contains(&key(&n.target)) {
                out.push(problem(
                    "unknown_target",
                    format!("norms[{i}].target"),
                    format!(
                        "norm '{}' targets '{}', which is neither a mission nor a goal",
                        n.id, n.target
                    ),
                ));
            }
        }
    }

    /// One role both obliged and prohibited on one goal.
    fn norm_conflicts(&self, out: &mut Vec<SpecProblem>) {
        // The same role both obliged and prohibited on one goal is a
        // contradiction the author must settle; inherited ones are resolved
        // by the documented precedence.
        let mut direct: BTreeMap<(String, String), BTreeSet<Modality>> = BTreeMap::new();
        for n in &self.norms {
            for goal in self.goals_of_target(&n.target) {
                direct
                    .entry((key(&n.role), goal))
                    .or_default()
                    .insert(n.modality);
            }
        }
        for ((role, goal), modalities) in &direct {
            if modalities.contains(&Modality::Obligation)
                && modalities.contains(&Modality::Prohibition)
            {
                out.push(problem(
                    "norm_conflict",
                    "norms",
                    format!("role '{role}' is both obliged and prohibited on goal '{goal}'"),
                ));
            }
        }
    }

    fn extends_cycle(&self) -> Option<String> {
        let parent: BTreeMap<String, String> = self
            .roles
            .iter()
            .filter_map(|r| r.extends.as_ref().map(|p| (key(&r.id), key(p))))
            .collect();
        for start in parent.keys() {
            let mut at = start;
            for _ in 0..=parent.len() {
                match parent.get(at) {
                    Some(p) if p == start => return Some(start.clone()),
                    Some(p) => at = p,
                    None => break,
                }
            }
        }
        None
    }

    fn group_cycle(&self) -> Option<String> {
        let children: BTreeMap<String, Vec<String>> = self
            .groups
            .iter()
            .map(|g| (key(&g.id), g.subgroups.iter().map(|s| key(s)).collect()))
            .collect();
        for start in children.keys() {
            let mut stack: Vec<&String> = children[start].iter().collect();
            let mut seen = BTreeSet::new();
            while let Some(g) = stack.pop() {
                if g == start {
                    return Some(start.clone());
                }
                if seen.insert(g.clone()) {
                    stack.extend(children.get(g).into_iter().flatten());
                }
            }
        }
        None
    }

    /// The goal ids (lower case) a norm target stands for.
    fn goals_of_target(&self, target: &str) -> Vec<String> {
        let t = key(target);
        let mut out = Vec::new();
        for m in &self.missions {
            if key(&m.id) == t {
                out.extend(m.goals.iter().map(|g| key(&g.id)));
            } else {
                out.extend(
                    m.goals
                        .iter()
                        .filter(|g| key(&g.id) == t)
                        .map(|g| key(&g.id)),
                );
            }
        }
        out
    }

    /// The goals (ids as written) whose plan covers a task, by type or key.
    pub fn goals_for(&self, task_type: &str, task_key: &str) -> Vec<String> {
        self.missions
            .iter()
            .flat_map(|m| &m.goals)
            .filter(|g| {
                g.plan
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(task_type) || s.eq_ignore_ascii_case(task_key))
            })
            .map(|g| g.id.clone())
            .collect()
    }

    /// The role and its ancestors through `extends` (lower case), nearest first.
    fn lineage(&self, role: &str) -> Vec<String> {
        let parent: BTreeMap<String, String> = self
            .roles
            .iter()
            .filter_map(|r| r.extends.as_ref().map(|p| (key(&r.id), key(p))))
            .collect();
        let mut out = vec![key(role)];
        while let Some(p) = out.last().and_then(|r| parent.get(r)) {
            if out.contains(p) {
                break;
            }
            out.push(p.clone());
        }
        out
    }

    /// The norms that bind `role` on a task covered by `goals`.
    pub fn norms_for<'a>(&'a self, role: &str, goals: &[String]) -> Vec<&'a NormSpec> {
        let lineage = self.lineage(role);
        let goals: BTreeSet<String> = goals.iter().map(|g| key(g)).collect();
        self.norms
            .iter()
            .filter(|n| lineage.contains(&key(&n.role)))
            .filter(|n| {
                self.goals_of_target(&n.target)
                    .iter()
                    .any(|g| goals.contains(g))
            })
            .collect()
    }

    /// What the spec says of an agent playing `role` for a task of this type and key.
    pub fn verdict(&self, role: &str, task_type: &str, task_key: &str) -> Deontic {
        let goals = self.goals_for(task_type, task_key);
        if goals.is_empty() {
            return Deontic::Unconstrained;
        }
        match self
            .norms_for(role, &goals)
            .iter()
            .map(|n| n.modality)
            .max()
        {
            Some(Modality::Prohibition) => Deontic::Prohibited,
            Some(Modality::Obligation) => Deontic::Obliged,
            Some(Modality::Permission) => Deontic::Permitted,
            None => match self.default_modality {
                DefaultModality::Permission => Deontic::Permitted,
                DefaultModality::Prohibition => Deontic::Prohibited,
            },
        }
    }

    /// The role's definition, if the spec has it.
    pub fn role(&self, role: &str) -> Option<&RoleSpec> {
        self.roles.iter().find(|r| r.id.eq_ignore_ascii_case(role))
    }

    /// Whether one more live agent may take `role`, given how many hold it
    /// now. Roles the spec does not define are unbounded.
    pub fn room_for(&self, role: &str, live: i64) -> bool {
        match self.role(role).and_then(|r| r.cardinality.max) {
            Some(max) => live < i64::from(max),
            None => true,
        }
    }

    /// The role a contractor hired for a task takes: the first obliged role
    /// with room, else the first permitted one, else `contractor` if that is
    /// allowed and has room; `None` when the spec leaves no role to hire into.
    /// `live` counts live agents per role (lower case).
    pub fn contractor_role(
        &self,
        task_type: &str,
        task_key: &str,
        live: &BTreeMap<String, i64>,
    ) -> Option<String> {
        let has_room = |role: &str| self.room_for(role, live.get(&key(role)).copied().unwrap_or(0));
        let mut by_verdict: Vec<(u8, &str)> = self
            .roles
            .iter()
            .filter_map(|r| match self.verdict(&r.id, task_type, task_key) {
                Deontic::Obliged => Some((0, r.id.as_str())),
                Deontic::Permitted => Some((1, r.id.as_str())),
                _ => None,
            })
            .collect();
        by_verdict.sort();
        if let Some((_, role)) = by_verdict.into_iter().find(|(_, r)| has_room(r)) {
            return Some(role.to_owned());
        }
        let fallback = "contractor";
        (self.verdict(fallback, task_type, task_key) != Deontic::Prohibited && has_room(fallback))
            .then(|| fallback.to_owned())
    }

    /// Roles whose live count is below their minimum: (role, live, min).
    pub fn understaffed(&self, live: &BTreeMap<String, i64>) -> Vec<(String, i64, u32)> {
        self.roles
            .iter()
            .filter_map(|r| {
                let n = live.get(&key(&r.id)).copied().unwrap_or(0);
                (n < i64::from(r.cardinality.min)).then(|| (r.id.clone(), n, r.cardinality.min))
            })
            .collect()
    }

    /// Roles whose live count is above their maximum: (role, live, max).
    pub fn overstaffed(&self, live: &BTreeMap<String, i64>) -> Vec<(String, i64, u32)> {
        self.roles
            .iter()
            .filter_map(|r| {
                let n = live.get(&key(&r.id)).copied().unwrap_or(0);
                r.cardinality
                    .max
                    .filter(|max| n > i64::from(*max))
                    .map(|max| (r.id.clone(), n, max))
            })
            .collect()
    }

    /// What a worker is told about the organisation for one task: the whole
    /// spec, the agent's role, its verdict, the goals the task serves, the
    /// norms that bind it and the links from and to its role.
    pub fn context_for(&self, role: &str, task_type: &str, task_key: &str) -> OrgContext {
        let goals = self.goals_for(task_type, task_key);
        let lineage = self.lineage(role);
        OrgContext {
            role: role.to_owned(),
            verdict: self.verdict(role, task_type, task_key),
            norms: self.norms_for(role, &goals).into_iter().cloned().collect(),
            links: self
                .links
                .iter()
                .filter(|l| lineage.contains(&key(&l.from)) || lineage.contains(&key(&l.to)))
                .cloned()
                .collect(),
            goals,
            spec: self.clone(),
        }
    }
}

/// The organisation part of a dispatch request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OrgContext {
    /// The role the agent plays.
    pub role: String,
    /// What the spec says of that role for this task.
    #[serde(default)]
    pub verdict: Deontic,
    /// Goals of the spec the task serves.
    pub goals: Vec<String>,
    /// Norms that bind the role on this task.
    pub norms: Vec<NormSpec>,
    /// Links from and to the role (and its parents).
    pub links: Vec<LinkSpec>,
    /// The whole spec.
    pub spec: OrgSpec,
}

impl OrgContext {
    /// A few lines for a model's system prompt: the role, what the spec says
    /// of it for this task, and the norms and links that bind it.
    pub fn brief(&self) -> String {
        let verdict = match self.verdict {
            Deontic::Obliged => "you are obliged to do this task",
            Deontic::Permitted => "you are permitted to do this task",
            Deontic::Prohibited => "you are prohibited from this task; report a failure",
            Deontic::Unconstrained => "no norm covers this task",
        };
        let mut out = format!(
            "Organisation{}: you act as role `{}`; {verdict}.",
            self.spec
                .name
                .as_deref()
                .map(|n| format!(" `{n}`"))
                .unwrap_or_default(),
            self.role
        );
        if !self.goals.is_empty() {
            out.push_str(&format!(
                " The task serves goal(s) {}.",
                self.goals.join(", ")
            ));
        }
        for n in &self.norms {
            let m = match n.modality {
                Modality::Obligation => "obliged",
                Modality::Permission => "permitted",
                Modality::Prohibition => "prohibited",
            };
            out.push_str(&format!("\nNorm {}: {} {m} {}.", n.id, n.role, n.target));
        }
        for l in &self.links {
            let k = match l.kind {
                LinkKind::Authority => "has authority over",
                LinkKind::Communication => "communicates with",
                LinkKind::Acquaintance => "knows",
            };
            out.push_str(&format!("\nLink: {} {k} {}.", l.from, l.to));
        }
        out
    }
}

/// A role's staffing against its cardinality.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Staffing {
    /// Role.
    pub role: String,
    /// Live (not offline) agents holding it.
    pub live: i64,
    /// Its cardinality.
    pub cardinality: Cardinality,
    /// `ok`, `understaffed` or `overstaffed`.
    pub status: &'static str,
}

/// Every role's staffing against its cardinality, in spec order.
pub fn staffing(spec: &OrgSpec, live: &BTreeMap<String, i64>) -> Vec<Staffing> {
    spec.roles
        .iter()
        .map(|r| {
            let n = live.get(&key(&r.id)).copied().unwrap_or(0);
            let status = if n < i64::from(r.cardinality.min) {
                "understaffed"
            } else if r.cardinality.max.is_some_and(|m| n > i64::from(m)) {
                "overstaffed"
            } else {
                "ok"
            };
            Staffing {
                role: r.id.clone(),
                live: n,
                cardinality: r.cardinality,
                status,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
mod tools;

pub use tools::{ToolAccess, tool_target};
