//! The tasks (SEP-2663) that mounts' servers made for one agent's calls, each
//! under an id seam minted. A client never sees a server's own task id: one
//! upstream connection serves every agent, so a server's id would let one
//! agent poll another's task. Each agent holds its own tasks (a caller's state,
//! `crate::chain::CallerState`), so a task is found only by the agent it was made
//! for, on the connection it was made on (a restarted server may give its ids
//! again), and forgotten at its `ttlMs` or when [`REMEMBERED_TASKS`] newer
//! ones of the same agent came after it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::{Map, Value as Json};

use crate::runtime::Running;

/// How many tasks a deployment remembers for one agent; past it, that agent's oldest is
/// forgotten (and cancelled at its server).
pub const REMEMBERED_TASKS: usize = 1024;

/// A task as the deployment holds it.
#[derive(Clone)]
pub struct Held {
    pub mount: String,
    /// The server's own id for the task.
    pub upstream: String,
    /// The build of the mount, and its connection, the task was made on.
    pub running: Weak<dyn Running>,
    pub connection: u64,
    /// What the call's result is given when the task completes, as a call's is.
    pub finish: Finish,
    /// The end of the task's `ttlMs`; none when the server set no limit.
    until: Option<Instant>,
}

/// The call a task was made for, as the call stage's hooks see it once more when a
/// `tasks/get` gives the task's result (`crate::chain`).
#[derive(Clone, Debug, Default)]
pub struct Finish {
    /// The tool called, by its final name, and its arguments.
    pub tool: String,
    pub arguments: Map<String, Json>,
    /// The tool's `max_output_chars`.
    pub max_output_chars: Option<u64>,
    /// The call may have written files, and its result has not been given yet.
    pub may_write: bool,
}

/// One agent's tasks.
#[derive(Default)]
pub struct Tasks(Mutex<Table>);

/// The tasks held by minted id, and their ids oldest first.
#[derive(Default)]
struct Table {
    by_id: HashMap<String, Held>,
    order: VecDeque<String>,
}

impl Tasks {
    /// Holds the task (its `CreateTaskResult`) that mount `mount`'s build `running`
    /// answered a call with, and gives it a minted `taskId` in place of the server's.
    /// The tasks it pushes out of the [`REMEMBERED_TASKS`].
    pub fn hold(&self, mount: &str, running: &Arc<dyn Running>, finish: Finish, task: &mut Json) -> Vec<Held> {
        let Some(fields) = task.as_object_mut() else { return Vec::new() };
        let Some(upstream) = fields.get("taskId").and_then(Json::as_str).map(str::to_owned) else { return Vec::new() };
        let id = uuid::Uuid::new_v4().to_string();
        fields.insert("taskId".into(), Json::from(id.clone()));
        let held = Held {
            mount: mount.to_owned(),
            upstream,
            running: Arc::downgrade(running),
            connection: crate::runtime::connection_of(running.as_ref()),
            finish,
            until: until(fields),
        };
        let mut tasks = self.0.lock().expect("tasks lock");
        let Table { by_id, order } = &mut *tasks;
        let mut pushed_out = Vec::new();
        while order.len() >= REMEMBERED_TASKS {
            if let Some(oldest) = order.pop_front().and_then(|oldest| by_id.remove(&oldest)) {
                pushed_out.push(oldest);
            }
        }
        order.push_back(id.clone());
        by_id.insert(id, held);
        pushed_out
    }

    /// Task `id`, if it holds it and its time has not run out.
    pub fn find(&self, id: &str) -> Option<Held> {
        let mut tasks = self.0.lock().expect("tasks lock");
        let Table { by_id, order } = &mut *tasks;
        let task = by_id.get(id)?;
        if task.until.is_some_and(|until| until <= Instant::now()) {
            by_id.remove(id);
            order.retain(|o| o != id);
            return None;
        }
        Some(task.clone())
    }

    /// A server's answer about task `id` (`tasks/get`): its `ttlMs` may have changed, and
    /// the result's finishing is done once (the writes it may have made are told once).
    pub fn answered(&self, id: &str, answer: &Map<String, Json>) {
        let mut tasks = self.0.lock().expect("tasks lock");
        if let Some(task) = tasks.by_id.get_mut(id) {
            if answer.contains_key("ttlMs") {
                task.until = until(answer);
            }
            if answer.contains_key("result") {
                task.finish.may_write = false;
            }
        }
    }
}

/// The end of a task's `ttlMs` from now; none without one.
fn until(fields: &Map<String, Json>) -> Option<Instant> {
    fields.get("ttlMs").and_then(Json::as_u64).map(|ttl| Instant::now() + Duration::from_millis(ttl))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn made(upstream: &str, ttl: Option<u64>) -> Json {
        json!({ "resultType": "task", "taskId": upstream, "status": "working", "ttlMs": ttl })
    }

    fn mount() -> Arc<dyn Running> {
        Arc::new(crate::runtime::Inert::no_runtime("test"))
    }

    fn hold(tasks: &Tasks, running: &Arc<dyn Running>, upstream: &str, ttl: Option<u64>) -> (String, Vec<Held>) {
        let mut task = made(upstream, ttl);
        let pushed_out = tasks.hold("m", running, Finish::default(), &mut task);
        (task["taskId"].as_str().unwrap().to_owned(), pushed_out)
    }

    #[test]
    fn a_task_is_found_under_its_minted_id_only() {
        let (tasks, running) = (Tasks::default(), mount());
        let (id, _) = hold(&tasks, &running, "t1", None);
        assert_ne!(id, "t1", "the server's id does not reach the client");
        let held = tasks.find(&id).unwrap();
        assert_eq!((held.mount.as_str(), held.upstream.as_str()), ("m", "t1"));
        assert!(Weak::ptr_eq(&held.running, &Arc::downgrade(&running)), "on the build it was made on");
        assert!(tasks.find("t1").is_none(), "nor can the server's own id reach it");
    }

    #[test]
    fn a_task_is_forgotten_at_its_ttl_and_kept_when_its_server_extends_it() {
        let (tasks, running) = (Tasks::default(), mount());
        let (gone, _) = hold(&tasks, &running, "t1", Some(0));
        assert!(tasks.find(&gone).is_none());
        let (kept, _) = hold(&tasks, &running, "t2", Some(0));
        tasks.answered(&kept, json!({ "ttlMs": 60_000 }).as_object().unwrap());
        assert!(tasks.find(&kept).is_some());
    }

    /// At the limit every task is found; one past it, the oldest is pushed out (and
    /// handed back, to be cancelled).
    #[test]
    fn an_agent_keeps_its_newest_remembered_tasks() {
        let (tasks, running) = (Tasks::default(), mount());
        let ids: Vec<String> = (0..REMEMBERED_TASKS)
            .map(|n| {
                let (id, pushed_out) = hold(&tasks, &running, &format!("t{n}"), None);
                assert!(pushed_out.is_empty(), "up to the limit nothing is pushed out");
                id
            })
            .collect();
        assert!(ids.iter().all(|id| tasks.find(id).is_some()));
        let (_, pushed_out) = hold(&tasks, &running, "past", None);
        assert_eq!(pushed_out.iter().map(|h| h.upstream.as_str()).collect::<Vec<_>>(), ["t0"]);
        assert!(tasks.find(&ids[0]).is_none(), "the oldest is forgotten");
        assert!(ids[1..].iter().all(|id| tasks.find(id).is_some()), "the newest REMEMBERED_TASKS are kept");
    }
}
