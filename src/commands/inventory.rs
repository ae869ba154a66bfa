//! `seam inventory FILE`: shown even for an invalid composition, whose broken mounts are `configured: no`.

use std::path::Path;

use seam_engine::{Engine, inventory};

use crate::{Format, Outcome};

pub fn run(engine: &Engine, file: &Path, agent: Option<&str>, format: Format) -> Result<Outcome, String> {
    let checked = super::check(engine, file)?;
    let invalid = super::report_errors(&checked);
    let Some(resolved) = &checked.resolved else { return Ok(Outcome::Invalid) };
    if let Some(name) = agent.filter(|a| !resolved.agents.contains_key(*a)) {
        return Err(format!("no agent `{name}` in {}", file.display()));
    }
    let inv = inventory::to_json(resolved, engine.surfaces(), agent);
    super::print(&match format {
        Format::Human => inventory::to_human(&inv),
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&inv).expect("serializable")),
    });
    Ok(if invalid { Outcome::Invalid } else { Outcome::Valid })
}
