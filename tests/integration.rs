//! The integration tests, one module a theme, in one test binary: every
//! binary links the whole program, so one keeps `target/` small and the
//! build short. Run one theme with `cargo test --test integration fuzz::`.

mod common;

mod bad_input;
mod cache;
mod cli;
mod consistency;
mod context;
mod crate_layers;
mod dashboard_browser;
mod doctor_setup;
mod edit_hook;
mod explain;
mod facts;
mod federation;
mod fuzz;
mod git;
mod git_hostile;
mod git_index;
mod git_kept;
mod git_mcp;
mod git_shallow;
mod hook;
mod hostile;
mod hostile_round_three;
mod hostile_round_two;
mod http;
mod impact;
mod incremental;
mod layers;
mod licences;
mod live;
mod mcp;
mod mcp_client;
mod members;
mod outline;
mod protocol;
mod ranking;
mod readme;
mod registry;
mod resolution;
mod search;
mod session_metrics;
mod shared_service;
mod string_links;
mod test_covers;
mod warnings;
