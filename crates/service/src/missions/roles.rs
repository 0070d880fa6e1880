//! Which roles may do what to a mission, one place for every surface (REST
//! handlers and the chat tools check the same lists).

use crate::auth::Role;

/// Roles that may create, change and cancel missions.
pub const WRITERS: &[Role] = &[Role::Admin, Role::Operator];

/// Roles that may approve plans, review results and settle tasks.
pub const APPROVERS: &[Role] = &[Role::Admin, Role::Operator, Role::Stakeholder];
