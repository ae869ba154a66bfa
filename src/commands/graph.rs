//! `seam graph FILE`

use std::path::Path;

use seam_engine::Engine;

use crate::{Exit, GraphFormat};

pub fn run(engine: &Engine, file: &Path, format: GraphFormat) -> Result<Exit, crate::error::Error> {
    let checked = super::check(engine, file)?;
    if super::report_errors(&checked) {
        return Ok(Exit::Invalid);
    }
    let plan = checked.plan().expect("a composition without errors has a plan");
    super::print(&match format {
        GraphFormat::Dot => plan.to_dot(),
        GraphFormat::Mermaid => plan.to_mermaid(),
        GraphFormat::Json => format!("{}\n", serde_json::to_string_pretty(&plan.to_json()).expect("serializable")),
        GraphFormat::Svg => plan.to_svg(plan.nodes().count() <= seam_engine::plan::MINIMISE_CROSSINGS_UP_TO),
    });
    Ok(Exit::Valid)
}
