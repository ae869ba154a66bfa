//! The tasks (SEP-2663) that mounts' servers made for agents' calls, each
//! under an id seam minted. A client never sees a server's own task id: one
//! upstream connection serves every agent, so a server's id would let one
//! agent poll another's task. A task is found only by the agent it was made
//! for, and forgotten at its `ttlMs` or when [`REMEMBERED_TASKS`] newer ones
//! came after it.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

/// How many tasks a deployment remembers; past it, the oldest is forgotten.
pub const REMEMBERED_TASKS: usize = 1024;

struct Held {
    agent: String,
    mount: String,
    /// The server's own id for the task.
    upstream: String,
    /// The end of the task's `ttlMs`; none when the server set no limit.
    until: Option<Instant>,
}

/// The tasks held, by minted id, and the ids oldest first.
#[derive(Default)]
pub struct Tasks(Mutex<(HashMap<String, Held>, VecDeque<String>)>);

impl Tasks {
    /// Holds the task that mount `mount`'s server answered a call of agent `agent`
    /// with (its `CreateTaskResult`), and gives it a minted `taskId` in its place.
    pub fn hold(&self, agent: &str, mount: &str, task: &mut Json) {
        let Some(fields) = task.as_object_mut() else { return };
        let Some(upstream) = fields.get("taskId").and_then(Json::as_str).map(str::to_owned) else { return };
        let until = fields.get("ttlMs").and_then(Json::as_u64).map(|ttl| Instant::now() + Duration::from_millis(ttl));
        let id = uuid::Uuid::new_v4().to_string();
        fields.insert("taskId".into(), Json::from(id.clone()));
        let mut held = self.0.lock().expect("tasks lock");
        let (by_id, order) = &mut *held;
        while order.len() >= REMEMBERED_TASKS {
            if let Some(oldest) = order.pop_front() {
                by_id.remove(&oldest);
            }
        }
        by_id.insert(id.clone(), Held { agent: agent.to_owned(), mount: mount.to_owned(), upstream, until });
        order.push_back(id);
    }

    /// The mount and the server's own id of task `id`, if agent `agent` holds it and
    /// its time has not run out.
    pub fn find(&self, agent: &str, id: &str) -> Option<(String, String)> {
        let mut held = self.0.lock().expect("tasks lock");
        let (by_id, order) = &mut *held;
        let task = by_id.get(id)?;
        if task.until.is_some_and(|until| until <= Instant::now()) {
            by_id.remove(id);
            order.retain(|o| o != id);
            return None;
        }
        (task.agent == agent).then(|| (task.mount.clone(), task.upstream.clone()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn made(upstream: &str, ttl: Option<u64>) -> Json {
        json!({ "resultType": "task", "taskId": upstream, "status": "working", "ttlMs": ttl })
    }

    #[test]
    fn a_task_is_found_under_its_minted_id_by_its_own_agent_only() {
        let tasks = Tasks::default();
        let mut task = made("t1", None);
        tasks.hold("a", "m", &mut task);
        let id = task["taskId"].as_str().unwrap().to_owned();
        assert_ne!(id, "t1", "the server's id does not reach the client");
        assert_eq!(tasks.find("a", &id), Some(("m".to_owned(), "t1".to_owned())));
        assert_eq!(tasks.find("b", &id), None, "another agent cannot reach it");
        assert_eq!(tasks.find("a", "t1"), None, "nor can the server's own id");
    }

    #[test]
    fn a_task_is_forgotten_at_its_ttl() {
        let tasks = Tasks::default();
        let mut task = made("t1", Some(0));
        tasks.hold("a", "m", &mut task);
        assert_eq!(tasks.find("a", task["taskId"].as_str().unwrap()), None);
    }

    /// At the limit every task is found; one past it, the oldest is forgotten.
    #[test]
    fn the_deployment_remembers_the_newest_remembered_tasks() {
        let tasks = Tasks::default();
        let ids: Vec<String> = (0..=REMEMBERED_TASKS)
            .map(|n| {
                let mut task = made(&format!("t{n}"), None);
                tasks.hold("a", "m", &mut task);
                task["taskId"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(tasks.find("a", &ids[0]), None, "the oldest is forgotten");
        assert!(ids[1..].iter().all(|id| tasks.find("a", id).is_some()), "the newest REMEMBERED_TASKS are kept");
    }
}
