//! `seam validate PATH...`

use std::path::{Path, PathBuf};

use seam_engine::Engine;
use seam_engine::render;

use crate::{Exit, ReportFormat};

/// Files named, and the `*.yaml` / `*.yml` files under folders named that `keep` keeps, in sorted order.
pub(super) fn collect(paths: &[PathBuf], keep: fn(&Path) -> bool) -> Result<Vec<PathBuf>, crate::error::Error> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found).map_err(|source| crate::error::Error::Walk { path: path.clone(), source })?;
            found.retain(|f| keep(f));
            found.sort();
            files.extend(found);
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(crate::error::Error::NoSuchPath(path.clone()));
        }
    }
    Ok(files)
}

/// Folders are searched without following symlinked folders (a loop, or a
/// Kubernetes ConfigMap's `..data`, would list files twice) and without dot folders.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if entry.file_type()?.is_dir() {
            if !hidden {
                walk(&path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
    Ok(())
}

pub fn run(
    engine: &Engine,
    paths: &[PathBuf],
    format: ReportFormat,
    deny_warnings: bool,
    environment: bool,
) -> Result<Exit, crate::error::Error> {
    // Test files (`seam test`) sit beside compositions and are not compositions.
    let files = collect(paths, |f| !super::test::is_test_file(f))?;
    let mut checked = Vec::with_capacity(files.len());
    for file in files {
        let mut c = super::check(engine, &file)?;
        if environment {
            c.check_environment();
        }
        checked.push((file, c));
    }
    let valid = checked.iter().all(|(_, c)| c.is_valid(deny_warnings));
    match format {
        ReportFormat::Human => {
            let mut out = String::new();
            let (mut errors, mut warnings) = (0, 0);
            // A base several compositions extend is reported (and counted) once, not once per composition.
            let mut shown = std::collections::HashSet::new();
            for (_, c) in &checked {
                for d in &c.diagnostics {
                    let text = render::human(d, &c.sources);
                    if shown.insert(text.clone()) {
                        out.push_str(&text);
                        out.push('\n');
                        if d.is_error() {
                            errors += 1;
                        } else {
                            warnings += 1;
                        }
                    }
                }
            }
            out.push_str(&render::summary(checked.len(), errors, warnings));
            super::print(&out);
        }
        ReportFormat::Github => {
            let mut out = String::new();
            let mut shown = std::collections::HashSet::new();
            for (_, c) in &checked {
                for d in &c.diagnostics {
                    let line = render::github(d, &c.sources);
                    if shown.insert(line.clone()) {
                        out.push_str(&line);
                    }
                }
            }
            super::print(&out);
        }
        ReportFormat::Json => {
            let report = render::json_report(&checked, deny_warnings);
            super::print(&format!("{}\n", serde_json::to_string_pretty(&report).expect("serializable")));
        }
    }
    // The process ends next: leave the trees to the OS instead of freeing them one by one.
    std::mem::forget(checked);
    Ok(if valid { Exit::Valid } else { Exit::Invalid })
}
