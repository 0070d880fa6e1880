//! Integration tests: the real service, real workers and a real PostgreSQL.

mod api_input;
mod attempts;
mod bdi;
mod board;
mod board_page;
mod cli;
mod contract_net;
mod failures;
mod governance;
mod handoffs;
mod helpers;
mod messaging;
mod missions;
mod openapi;
mod peers;
mod plan_library;
mod planning;
mod proof;
mod real_llm;
mod replicas;
mod streams;
mod team_decisions;
mod timeline;
mod tool_policy;
mod tools;
mod workforce;
