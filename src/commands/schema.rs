//! `seam schema [--test]`

use seam_engine::Engine;

use crate::Exit;

/// The schema exactly as checked in at `schemas/composition.schema.json`.
pub fn schema_text(engine: &Engine) -> String {
    format!("{}\n", serde_json::to_string_pretty(engine.schema()).expect("serializable"))
}

/// The schema of test files exactly as checked in at `schemas/composition-test.schema.json`.
pub fn test_schema_text() -> String {
    format!("{}\n", serde_json::to_string_pretty(&seam_engine::expect::schema()).expect("serializable"))
}

pub fn run(engine: &Engine, test: bool) -> Result<Exit, crate::error::Error> {
    super::print(&if test { test_schema_text() } else { schema_text(engine) });
    Ok(Exit::Valid)
}
