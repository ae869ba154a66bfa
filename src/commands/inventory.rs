//! `seam inventory FILE`: shown even for an invalid composition, whose broken mounts are `configured: no`.

use std::path::Path;

use seam_engine::{Engine, inventory};

use crate::{Exit, Format};

pub fn run(engine: &Engine, file: &Path, agent: Option<&str>, format: Format, probe: bool) -> Result<Exit, crate::error::Error> {
    let checked = super::check(engine, file)?;
    let invalid = super::report_errors(&checked);
    let Some(resolved) = &checked.resolved else { return Ok(Exit::Invalid) };
    if let Some(name) = agent.filter(|a| !resolved.agents.contains_key(*a)) {
        return Err(crate::error::Error::UnknownAgent { agent: name.to_owned(), file: file.to_owned() });
    }
    let mut inv = inventory::to_json(resolved, engine.surfaces(), agent);
    if probe && !invalid {
        inventory::add_probe(&mut inv, &probe_status(file)?);
    }
    super::print(&match format {
        Format::Human => inventory::to_human(&inv),
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&inv).expect("serializable")),
    });
    Ok(if invalid { Exit::Invalid } else { Exit::Valid })
}

/// Starts the composition (every mount activates: ready or failed), reads
/// its status and the tools each mount discovered, and shuts it down.
fn probe_status(file: &Path) -> Result<serde_json::Value, crate::error::Error> {
    let runtime = super::runtime()?;
    runtime.block_on(async {
        match super::serve::start(crate::engine(), file, std::time::Duration::from_secs(5), super::serve::Reach::Local, Vec::new()).await {
            Ok(deployment) => {
                let mut status = serde_json::to_value(deployment.status()).expect("a status serializes");
                if let Some(live) = deployment.live() {
                    // Each agent's tools as served (no client roots: what a client that offers none sees), and its mounts.
                    for (name, agent) in &live.resolved.agents {
                        let view = live.view(name, &[]).await.unwrap_or_default();
                        let tokens = view.catalog_tokens();
                        let served: Vec<String> = view.tools.into_iter().map(|t| t.name).collect();
                        let deferred: Vec<String> = live
                            .catalog(name)
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|e| e.deferral != seam_engine::disclosure::Deferral::Never)
                            .map(|e| e.spec.name)
                            .collect();
                        let mounts: Vec<&String> = agent.scope.iter().filter(|id| live.sees(name, id)).collect();
                        status["agents"][name] =
                            serde_json::json!({ "resolved": served, "deferred": deferred, "mounts": mounts, "catalog_tokens": tokens });
                    }
                    for (id, slot) in &live.mounts {
                        let tools: Vec<serde_json::Value> = slot
                            .running
                            .tools()
                            .iter()
                            .map(|t| serde_json::json!({ "name": t.name, "annotations": t.definition.get("annotations") }))
                            .collect();
                        status["mounts"][id]["discovered"] = serde_json::Value::from(tools);
                    }
                }
                deployment.shutdown().await;
                Ok(status)
            }
            // A required mount that does not come up rejects the start; its diagnostics are printed.
            Err(_) => Err(crate::error::Error::NotStarted(file.to_owned())),
        }
    })
}
