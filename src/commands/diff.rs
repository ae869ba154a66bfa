//! `seam diff OLD NEW`

use std::path::Path;

use seam_engine::Engine;
use seam_engine::diff::Diff;

use crate::{Exit, Format};

pub fn run(engine: &Engine, old: &Path, new: &Path, format: Format) -> Result<Exit, crate::error::Error> {
    let old = super::check(engine, old)?;
    let new = super::check(engine, new)?;
    let old_bad = super::report_errors(&old);
    if old_bad | super::report_errors(&new) {
        return Ok(Exit::Invalid);
    }
    let diff = Diff::between(old.plan().as_ref(), &new.plan().expect("valid"));
    super::print(&match format {
        Format::Human => diff.to_human(),
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&diff.to_json()).expect("serializable")),
    });
    Ok(Exit::Valid)
}
