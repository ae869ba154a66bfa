//! The calls of 2026-07-28 clients waiting for their answers (Multi Round-Trip
//! Requests, issue 28). Such a client cannot be sent a request, so a question a
//! mount's server asks during its call is handed to it in the call's
//! `input_required` result, and the call waits here, still running, under a
//! `requestState` seam mints at random (unguessable; nothing in it to forge).
//! A state is bound to its agent, request (tool, prompt or URI) and arguments, used once (the next round
//! gets a new one), and forgotten at `serve.input_timeout`, when the call is
//! cancelled. Each agent's calls wait in a [`WaitingCalls`] of their own, in the
//! served front end (HTTP's app, or the stdio session: `crate::gateway::Clients`):
//! one agent's calls never count against, or are found by, another's, and a retry
//! that reaches another seam (a load balancer's other replica) finds none
//! (`INPUT_STATE_UNKNOWN`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seam_engine::codes;
use seam_engine::codes::Code;
use serde_json::{Map, Value as Json};

use crate::client_link::ParkedCall;

/// The most calls one agent may have waiting for their clients' answers; a question
/// past it is refused to the server that asked (`INPUT_CALLS_EXCEEDED`).
pub const MAX_WAITING_CALLS: usize = 256;

/// A call waiting for its client's answers, and what a retry must match.
pub struct Waiting {
    /// The request it is: its method, and the tool, prompt or URI it names.
    pub asked: Asked,
    pub arguments: Map<String, Json>,
    pub call: Parked,
}

/// The request a waiting call is (a retry must be the same one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    pub method: &'static str,
    pub name: String,
}

/// A waiting `tools/call`, `prompts/get` or `resources/read`; or none running: the
/// server refused the call until the user opened URLs (-32042), and the retry calls it
/// afresh.
pub enum Parked {
    Running(ParkedCall),
    Afresh,
}

impl Parked {
    /// Whether the client's answers read as the results their questions ask for.
    pub fn check(&self, responses: &rmcp::model::InputResponses) -> Result<(), String> {
        match self {
            Parked::Running(call) => call.check(responses),
            Parked::Afresh => Ok(()),
        }
    }

    pub fn cancel(&self) {
        if let Parked::Running(call) = self {
            call.cancel();
        }
    }
}

enum Slot {
    Waiting {
        waiting: Box<Waiting>,
        until: Instant,
        /// The timer that forgets it at `until`; stopped when a retry takes it.
        timer: tokio::task::AbortHandle,
    },
    /// Its time ran out (the call was cancelled); kept a while to say so.
    Expired,
}

/// One agent's calls waiting for their clients' answers, by `requestState`, shared by
/// the agent's sessions in one served front end (a retry comes on a request of its own).
#[derive(Default)]
pub struct WaitingCalls {
    slots: Mutex<HashMap<String, Slot>>,
}

/// No call waits on a `requestState`.
pub fn unknown_state() -> (Code, String) {
    (codes::INPUT_STATE_UNKNOWN, "no call is waiting on this requestState: it was answered already, or never given here".to_owned())
}

impl WaitingCalls {
    /// How many calls wait now (not those whose time ran out).
    pub fn waiting_now(&self) -> usize {
        self.table().values().filter(|slot| matches!(slot, Slot::Waiting { .. })).count()
    }

    /// Whether a call waits, or waited, under `state`.
    pub fn holds(&self, state: &str) -> bool {
        self.table().contains_key(state)
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds `waiting` for its client's retry, at most `patience`: its `requestState`; or
    /// `Err` (given back) when the agent already has `MAX_WAITING_CALLS` calls waiting.
    pub fn hold(self: &Arc<Self>, waiting: Waiting, patience: Duration) -> Result<String, Box<Waiting>> {
        let mut slots = self.table();
        if slots.values().filter(|slot| matches!(slot, Slot::Waiting { .. })).count() >= MAX_WAITING_CALLS {
            return Err(Box::new(waiting));
        }
        let state = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let key = state.clone();
        // The timer holds the table weakly: a front end that has gone takes its waiting calls with it.
        let calls = Arc::downgrade(self);
        let timer = tokio::spawn(async move {
            tokio::time::sleep(patience).await;
            let Some(calls) = calls.upgrade() else { return };
            let expired = {
                let mut slots = calls.table();
                match slots.remove(&key) {
                    Some(Slot::Waiting { waiting, .. }) => {
                        waiting.call.cancel();
                        slots.insert(key.clone(), Slot::Expired);
                        true
                    }
                    _ => false,
                }
            };
            if expired {
                // Said for another while, then forgotten.
                tokio::time::sleep(patience).await;
                calls.table().remove(&key);
            }
        });
        slots.insert(
            state.clone(),
            Slot::Waiting { waiting: Box::new(waiting), until: Instant::now() + patience, timer: timer.abort_handle() },
        );
        Ok(state)
    }

    /// The call waiting under `state` for this retry (the same request with `arguments`),
    /// taken out once `check` passes on it (the client's answers read); or why not, with
    /// its code. A retry that names another request or arguments, or whose answers do
    /// not read, leaves the call waiting.
    pub fn take(
        &self,
        state: &str,
        asked: &Asked,
        arguments: &Map<String, Json>,
        check: impl FnOnce(&Parked) -> Result<(), String>,
    ) -> Result<Waiting, (Code, String)> {
        let mut slots = self.table();
        let expired = || (codes::INPUT_STATE_EXPIRED, "the call waited longer than `serve.input_timeout` and was cancelled".to_owned());
        match slots.get(state) {
            None => Err(unknown_state()),
            Some(Slot::Expired) => {
                slots.remove(state);
                Err(expired())
            }
            Some(Slot::Waiting { until, .. }) if *until <= Instant::now() => {
                if let Some(Slot::Waiting { waiting, timer, .. }) = slots.remove(state) {
                    timer.abort();
                    waiting.call.cancel();
                }
                Err(expired())
            }
            Some(Slot::Waiting { waiting, .. }) if waiting.asked != *asked || waiting.arguments != *arguments => Err((
                codes::INPUT_STATE_WRONG_REQUEST,
                format!(
                    "this requestState is a {} of `{}` with other arguments, not a {} of `{}` with these",
                    waiting.asked.method, waiting.asked.name, asked.method, asked.name
                ),
            )),
            Some(Slot::Waiting { waiting, .. }) => {
                check(&waiting.call).map_err(|why| (codes::INPUT_RESPONSE_INVALID, why))?;
                match slots.remove(state) {
                    Some(Slot::Waiting { waiting, timer, .. }) => {
                        timer.abort();
                        Ok(*waiting)
                    }
                    _ => unreachable!("the slot was just read as waiting"),
                }
            }
        }
    }
}
