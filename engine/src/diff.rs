//! What a reload from one plan to the next would do, node by node.

use std::collections::BTreeSet;

use serde_json::{Value as Json, json};

use crate::plan::Plan;

/// `keep` means the node's own config and needs are unchanged; `restart` is every
/// changed node and every node that transitively needs one, in build order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    pub add: Vec<String>,
    pub change: Vec<String>,
    pub remove: Vec<String>,
    pub keep: Vec<String>,
    pub restart: Vec<String>,
}

impl Diff {
    /// The diff from `old` (`None` = the empty generation) to `new`.
    pub fn between(old: Option<&Plan>, new: &Plan) -> Diff {
        let mut diff = Diff::default();
        for node in new.nodes() {
            match old.and_then(|o| o.node(&node.id)) {
                None => diff.add.push(node.id.clone()),
                Some(prev) if prev.digest == node.digest => diff.keep.push(node.id.clone()),
                Some(_) => diff.change.push(node.id.clone()),
            }
        }
        if let Some(old) = old {
            diff.remove = old.nodes().filter(|n| new.node(&n.id).is_none()).map(|n| n.id.clone()).collect();
        }
        let mut restart: BTreeSet<String> = diff.change.iter().cloned().collect();
        for id in &diff.change {
            restart.extend(new.dependents(id));
        }
        let added: BTreeSet<&String> = diff.add.iter().collect();
        diff.restart = new.order.iter().filter(|id| restart.contains(*id) && !added.contains(id)).cloned().collect();
        diff
    }

    pub fn to_json(&self) -> Json {
        json!({ "add": self.add, "change": self.change, "remove": self.remove, "keep": self.keep, "restart": self.restart })
    }

    pub fn to_human(&self) -> String {
        let mut out = String::new();
        for (label, ids) in [("add", &self.add), ("change", &self.change), ("remove", &self.remove), ("restart", &self.restart)] {
            for id in ids {
                out.push_str(&format!("{label:<8}{id}\n"));
            }
        }
        out.push_str(&format!(
            "{} to add, {} to change, {} to remove, {} to restart, {} kept\n",
            self.add.len(),
            self.change.len(),
            self.remove.len(),
            self.restart.len(),
            self.keep.len()
        ));
        out
    }
}
