//! `seam schema`

use seam_engine::Engine;

use crate::Exit;

/// The schema exactly as checked in at `schemas/composition.schema.json`.
pub fn schema_text(engine: &Engine) -> String {
    format!("{}\n", serde_json::to_string_pretty(engine.schema()).expect("serializable"))
}

pub fn run(engine: &Engine) -> Result<Exit, crate::error::Error> {
    super::print(&schema_text(engine));
    Ok(Exit::Valid)
}
