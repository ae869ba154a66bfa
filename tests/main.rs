//! seam's integration tests, in one crate: one binary links the dependencies
//! once, where a binary per file linked them all eighteen times. Each module
//! is one area; `support` holds the peers and helpers they share.

mod support;

mod access;
mod approval;
mod audit;
mod chaos;
mod cli;
mod disclosure;
mod fixtures;
mod fleet;
mod generated;
mod image;
mod import;
mod isolation;
mod lsp;
mod metrics;
mod oauth;
mod pinning;
mod promises;
mod properties;
mod quota;
mod rewrite;
mod robust;
mod secrets;
mod semantics;
mod serve;
mod skills;
mod skills_discovery;
mod test_files;
mod traces;
mod ui;
mod web;
mod web_fetch;
mod web_providers;
