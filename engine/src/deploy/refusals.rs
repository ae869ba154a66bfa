//! What refuses a reload before anything is built: a `serve` token nobody can read, an
//! agent left open past loopback, an audit trail that cannot be kept.

use super::*;

impl Deployment {
    /// The trail the next generation writes (`serve.audit`): the live one when it names
    /// the same, else opened now. One that cannot be opened (its folder or file, or its
    /// key) is the reload's refusal.
    pub(super) fn trail_for(&self, resolved: &Resolved, tree: &crate::yaml::Node) -> Result<Option<Arc<crate::audit::Trail>>, Diagnostic> {
        let serve = resolved.services.get("serve").and_then(|s| crate::model::ServeLimits::deserialize(s).ok()).unwrap_or_default();
        let (true, Some(config)) = (self.options.audit, serve.audit) else { return Ok(None) };
        match crate::audit::Trail::open_after(&config, self.audit.load_full(), &*self.env) {
            Ok(trail) => Ok(Some(trail)),
            Err(unkept) => {
                let at = unkept.pointer();
                Err(Diagnostic::new(
                    crate::codes::AUDIT_UNWRITABLE,
                    locate(tree, at),
                    at,
                    format!("the audit trail cannot be kept: {unkept}"),
                ))
            }
        }
    }

    /// The audit trail written now, if any.
    pub fn audit(&self) -> Option<Arc<crate::audit::Trail>> {
        self.audit.load_full()
    }

    /// Served over HTTP: a token nobody can read would shut its clients out (the page
    /// that says why included), and past loopback no agent may be left open.
    pub(super) fn token_refusals(&self, resolved: &Resolved, tree: &crate::yaml::Node) -> Vec<Diagnostic> {
        let mut refused = Vec::new();
        let mut checked = BTreeSet::new();
        for agent in resolved.agents.keys() {
            let Some((source, at)) = resolved.token_for(agent) else { continue };
            if !checked.insert(at.clone()) {
                continue;
            }
            if let Err(e) = source.read() {
                let pointer = source.pointer(&at);
                refused.push(Diagnostic::new(crate::codes::SERVE_TOKEN_UNREADABLE, locate(tree, &pointer), &pointer, e.to_string()));
            }
        }
        let open = resolved.open_agents();
        if self.options.require_tokens && !open.is_empty() {
            let at = if open.contains(&crate::resolve::DEFAULT_AGENT) {
                "/serve".to_owned()
            } else {
                crate::diagnostic::pointer(["agents", open[0]])
            };
            let message = format!(
                "seam listens beyond loopback, and no token guards agent{} {}: set `serve.bearer_token_env` (or `_file`), or start with `--insecure-no-auth`",
                if open.len() > 1 { "s" } else { "" },
                open.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
            );
            refused.push(Diagnostic::new(crate::codes::SERVE_TOKEN_REQUIRED, locate(tree, &at), &at, message));
        }
        refused
    }
}
