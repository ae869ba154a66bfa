//! What one reload did (`Outcome`): applied, rejected or unchanged, with the
//! diagnostics it found, as `/status`, the status page and the log show it.

use std::time::SystemTime;

use serde_json::{Value as Json, json};

use crate::codes::Severity;
use crate::diagnostic::{Diagnostic, Sources};
use crate::runtime::timestamp;

/// The most diagnostics one outcome keeps for `/status`, the status page and
/// the log (each is bounded too: `diagnostic::MAX_MESSAGE_CHARS`,
/// `render::EXCERPT_CHARS`); `seam validate` lists them all.
pub const KEPT_DIAGNOSTICS: usize = 100;

/// A time as `/status` gives it (`timestamp`).
fn rfc3339<S: serde::Serializer>(at: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&timestamp(*at))
}

/// What one reload did, as `/status` gives it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Outcome {
    /// Which reload of the deployment this was (the start is 1), so that a watcher
    /// of `/status` tells a new outcome from the last one, a rejection from the one before.
    pub number: u64,
    pub outcome: OutcomeKind,
    #[serde(serialize_with = "rfc3339")]
    pub at: SystemTime,
    /// The generation live after this reload.
    pub generation: Option<u64>,
    /// Each as `seam validate --format json` gives it, plus `path` and the human
    /// rendering; the first [`KEPT_DIAGNOSTICS`] of them.
    pub diagnostics: Vec<Json>,
    /// How many more the reload found and this outcome does not keep.
    pub diagnostics_omitted: usize,
    /// Mounts built by this reload (added or restarted).
    pub built: Vec<String>,
    /// Mounts of the previous generation disposed by this reload (removed or restarted).
    pub retired: Vec<String>,
    /// Mounts that took a changed config while running (no restart).
    pub reconfigured: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeKind {
    Applied,
    Rejected,
    Unchanged,
}

impl OutcomeKind {
    pub const ALL: [OutcomeKind; 3] = [OutcomeKind::Applied, OutcomeKind::Rejected, OutcomeKind::Unchanged];

    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Applied => "applied",
            OutcomeKind::Rejected => "rejected",
            OutcomeKind::Unchanged => "unchanged",
        }
    }
}

impl Outcome {
    /// An outcome that built, retired and reconfigured nothing.
    pub fn new(outcome: OutcomeKind, generation: Option<u64>, mut diagnostics: Vec<Json>) -> Outcome {
        let diagnostics_omitted = diagnostics.len().saturating_sub(KEPT_DIAGNOSTICS);
        if diagnostics_omitted > 0 {
            // What rejected the reload is kept before what only warned (a stable sort: file order otherwise).
            diagnostics.sort_by_key(|d| d["severity"] != "error");
            diagnostics.truncate(KEPT_DIAGNOSTICS);
        }
        Outcome {
            number: 0,
            outcome,
            at: SystemTime::now(),
            generation,
            diagnostics,
            diagnostics_omitted,
            built: Vec::new(),
            retired: Vec::new(),
            reconfigured: Vec::new(),
        }
    }

    /// The codes of the errors it found, in the order found, each once.
    pub fn error_codes(&self) -> Vec<&str> {
        let mut codes: Vec<&str> = Vec::new();
        for d in &self.diagnostics {
            let code = d["code"].as_str().unwrap_or_default();
            if d["severity"] == Severity::Error.as_str() && !codes.contains(&code) {
                codes.push(code);
            }
        }
        codes
    }

    /// The diagnostics as `seam validate` prints them.
    pub fn human(&self) -> String {
        let mut text: String = self.diagnostics.iter().filter_map(|d| d["rendered"].as_str()).collect();
        if self.diagnostics_omitted > 0 {
            text.push_str(&format!("… and {} more (`seam validate` lists them all)\n", self.diagnostics_omitted));
        }
        text
    }
}

pub(crate) fn diagnostic_json(d: &Diagnostic, sources: &Sources) -> Json {
    json!({
        "severity": d.severity().as_str(),
        "code": d.code,
        "message": d.message,
        "path": sources.path(d.span.file).display().to_string(),
        "pointer": d.pointer,
        "line": d.span.line,
        "column": d.span.column,
        "rendered": crate::render::human(d, sources),
    })
}

/// Logs an outcome: one line, plus its diagnostics rendered as `seam validate` prints them.
pub fn log_outcome(outcome: &Outcome) {
    match outcome.outcome {
        OutcomeKind::Applied => tracing::info!(
            reload = outcome.number,
            outcome = outcome.outcome.as_str(),
            generation = outcome.generation,
            built = ?outcome.built,
            retired = ?outcome.retired,
            reconfigured = ?outcome.reconfigured,
            "reload applied"
        ),
        OutcomeKind::Unchanged => {
            tracing::info!(
                reload = outcome.number,
                outcome = outcome.outcome.as_str(),
                generation = outcome.generation,
                "reload: composition unchanged"
            )
        }
        OutcomeKind::Rejected => tracing::error!(
            reload = outcome.number,
            outcome = outcome.outcome.as_str(),
            generation = outcome.generation,
            // The codes that rejected it, for whoever reads the log as fields (`--log-format json`).
            codes = %outcome.error_codes().join(","),
            "reload rejected; the live generation keeps serving:\n{}",
            outcome.human()
        ),
    }
    for d in &outcome.diagnostics {
        if outcome.outcome != OutcomeKind::Rejected && d["severity"] == Severity::Warning.as_str() {
            tracing::warn!("{}", d["rendered"].as_str().unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One past `KEPT_DIAGNOSTICS`, the rest are counted, not kept; what
    /// rejected the reload is kept before what only warned.
    #[test]
    fn an_outcome_keeps_its_errors_first_when_it_cannot_keep_all() {
        let d = |severity: &str, n: usize| json!({ "severity": severity, "code": format!("C{n}"), "rendered": "" });
        let at_limit: Vec<Json> = (0..KEPT_DIAGNOSTICS).map(|n| d("warning", n)).collect();
        let kept = Outcome::new(OutcomeKind::Rejected, None, at_limit.clone());
        assert_eq!((kept.diagnostics, kept.diagnostics_omitted), (at_limit, 0), "at the limit, all kept in order");
        let mut past: Vec<Json> = (0..KEPT_DIAGNOSTICS).map(|n| d("warning", n)).collect();
        past.push(d("error", KEPT_DIAGNOSTICS));
        let kept = Outcome::new(OutcomeKind::Rejected, None, past);
        assert_eq!((kept.diagnostics.len(), kept.diagnostics_omitted), (KEPT_DIAGNOSTICS, 1));
        assert_eq!(kept.diagnostics[0]["severity"], "error");
        assert_eq!(kept.diagnostics[1]["code"], "C0", "then the warnings in their order");
        assert!(kept.human().ends_with("… and 1 more (`seam validate` lists them all)\n"));
    }
}
