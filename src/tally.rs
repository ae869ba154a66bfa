//! What clients hold of this process, counted per agent: MCP sessions (over
//! HTTP), `subscriptions/listen` streams, and resource subscriptions (a
//! session's and a stream's together). Each is taken as a [`Held`] before it
//! exists and given back when that is dropped, so that a count can never be
//! read before it is raised: two clients admitted at once cannot both take
//! the last place.
//!
//! One agent's token must not be able to take what every agent shares: each
//! count has a bound per agent (`serve.max_sessions_per_agent`,
//! `max_listen_streams_per_agent`, `max_subscriptions_per_agent`), and sessions
//! one across agents too (`serve.max_sessions`). An agent's row is kept only
//! while it holds something, so the table is bounded by what the limits allow.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use seam_engine::model::ServeLimits;

/// A kind of thing a client holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holding {
    Session,
    ListenStream,
    Subscription,
}

impl Holding {
    fn index(self) -> usize {
        match self {
            Holding::Session => 0,
            Holding::ListenStream => 1,
            Holding::Subscription => 2,
        }
    }

    /// The most one agent may hold at once.
    fn per_agent(self, limits: &ServeLimits) -> usize {
        let limit = match self {
            Holding::Session => limits.sessions_per_agent(),
            Holding::ListenStream => limits.max_listen_streams_per_agent,
            Holding::Subscription => limits.max_subscriptions_per_agent,
        };
        limit as usize
    }
}

/// Why a [`Held`] was not given: which bound it would pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// `max_sessions`, every agent's sessions together.
    AllAgents(usize),
    /// The agent's own bound for what was asked.
    Agent(usize),
}

impl Full {
    /// Why `agent` was refused one more `what`, naming the bound.
    pub fn why(self, agent: &str, what: Holding) -> String {
        match (self, what) {
            (Full::AllAgents(n), _) => format!("too many open sessions: {n}, every agent's together, are open (`serve.max_sessions`)"),
            (Full::Agent(n), Holding::Session) => {
                format!("too many open sessions: agent `{agent}` has {n} open, the most it may (`serve.max_sessions_per_agent`)")
            }
            (Full::Agent(n), Holding::ListenStream) => {
                format!("agent `{agent}` has {n} listen streams open, the most it may (`serve.max_listen_streams_per_agent`)")
            }
            (Full::Agent(n), Holding::Subscription) => format!(
                "agent `{agent}` holds {n} subscriptions, its sessions' and listen streams' together, the most it may (`serve.max_subscriptions_per_agent`)"
            ),
        }
    }
}

/// Counts per agent: sessions, listen streams, subscriptions.
type Counts = [usize; 3];

/// Told an agent's session ended, and how long it lasted (`/metrics`).
pub type SessionEnded = Box<dyn Fn(&str, std::time::Duration) + Send + Sync>;

/// Each agent's counts (only agents that hold something); every agent's sessions
/// together are their sum.
#[derive(Default)]
pub struct Tally {
    counts: Mutex<HashMap<Arc<str>, Counts>>,
    session_ended: std::sync::OnceLock<SessionEnded>,
}

fn sessions(by_agent: &HashMap<Arc<str>, Counts>) -> usize {
    by_agent.values().map(|row| row[Holding::Session.index()]).sum()
}

/// One thing of one agent's, counted until dropped.
pub struct Held {
    tally: Arc<Tally>,
    agent: Arc<str>,
    what: Holding,
    /// When the session it counts opened (`opened`): one that never opened is no session that ended.
    opened: Option<std::time::Instant>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Held({:?} of `{}`)", self.what, self.agent)
    }
}

impl Held {
    /// The session this place was taken for has opened: its end is told (`Tally::when_session_ends`).
    pub fn opened(&mut self) {
        if self.what == Holding::Session {
            self.opened = Some(std::time::Instant::now());
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let (Some(opened), Some(told)) = (self.opened, self.tally.session_ended.get()) {
            told(&self.agent, opened.elapsed());
        }
        let mut by_agent = self.tally.counts.lock().expect("tally lock");
        if let Some(row) = by_agent.get_mut(&self.agent) {
            row[self.what.index()] -= 1;
            if row.iter().all(|n| *n == 0) {
                by_agent.remove(&self.agent);
            }
        }
    }
}

impl Tally {
    /// One more `what` for `agent`, unless that would pass a bound of `limits` (the live ones).
    pub fn hold(self: &Arc<Self>, agent: &str, what: Holding, limits: &ServeLimits) -> Result<Held, Full> {
        let mut by_agent = self.counts.lock().expect("tally lock");
        if what == Holding::Session && sessions(&by_agent) >= limits.max_sessions as usize {
            return Err(Full::AllAgents(limits.max_sessions as usize));
        }
        let per_agent = what.per_agent(limits);
        let agent: Arc<str> = match by_agent.get_key_value(agent) {
            Some((_, row)) if row[what.index()] >= per_agent => return Err(Full::Agent(per_agent)),
            Some((name, _)) => name.clone(),
            None => Arc::from(agent),
        };
        by_agent.entry(agent.clone()).or_default()[what.index()] += 1;
        Ok(Held { tally: self.clone(), agent, what, opened: None })
    }

    /// From now on `told` hears of each session that ends (once: a second is ignored).
    pub fn when_session_ends(&self, told: SessionEnded) {
        let _ = self.session_ended.set(told);
    }

    /// What each agent holds now, for `/status`: agents that hold nothing are left out.
    pub fn status(&self) -> ClientsStatus {
        let by_agent = self.counts.lock().expect("tally lock");
        let agents = by_agent
            .iter()
            .map(|(agent, [sessions, listen_streams, subscriptions])| {
                let holds = AgentHolds { sessions: *sessions, listen_streams: *listen_streams, subscriptions: *subscriptions };
                (agent.to_string(), holds)
            })
            .collect();
        ClientsStatus { sessions: sessions(&by_agent), agents }
    }
}

/// What this process's clients hold (`/status` `clients`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ClientsStatus {
    /// Sessions of every agent together.
    pub sessions: usize,
    pub agents: BTreeMap<String, AgentHolds>,
}

/// What one agent's clients hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AgentHolds {
    pub sessions: usize,
    pub listen_streams: usize,
    pub subscriptions: usize,
}

#[cfg(test)]
mod tests {
    use super::{Full, Holding, Tally};
    use seam_engine::model::ServeLimits;
    use std::sync::Arc;

    fn limits(max_sessions: u32, per_agent: Option<u32>) -> ServeLimits {
        ServeLimits { max_sessions, max_sessions_per_agent: per_agent, ..ServeLimits::default() }
    }

    /// Sessions at both bounds: `max_sessions` across agents and
    /// `max_sessions_per_agent` for each; a place given back is taken again,
    /// and an agent's row goes when it holds nothing.
    #[test]
    fn sessions_are_held_to_both_bounds_and_given_back() {
        let tally = Arc::new(Tally::default());
        let limits = limits(3, Some(2));
        let a1 = tally.hold("a", Holding::Session, &limits).unwrap();
        let _a2 = tally.hold("a", Holding::Session, &limits).unwrap();
        assert_eq!(tally.hold("a", Holding::Session, &limits).unwrap_err(), Full::Agent(2), "one past the agent's bound");
        let b1 = tally.hold("b", Holding::Session, &limits).unwrap();
        assert_eq!(tally.hold("c", Holding::Session, &limits).unwrap_err(), Full::AllAgents(3), "one past every agent's bound");
        drop(a1);
        let _a3 = tally.hold("a", Holding::Session, &limits).unwrap();
        drop(b1);
        assert!(!tally.status().agents.contains_key("b"), "{:?}", tally.status());
        assert_eq!(tally.status().sessions, 2);
    }

    /// Without `max_sessions_per_agent`, one agent may take every session.
    #[test]
    fn the_per_agent_bound_defaults_to_max_sessions() {
        let tally = Arc::new(Tally::default());
        let limits = limits(2, None);
        let held: Vec<_> = (0..2).map(|_| tally.hold("a", Holding::Session, &limits).unwrap()).collect();
        assert_eq!(tally.hold("a", Holding::Session, &limits).unwrap_err(), Full::AllAgents(2));
        drop(held);
    }

    /// Listen streams and subscriptions are bounded per agent only, each apart.
    #[test]
    fn streams_and_subscriptions_are_bounded_per_agent() {
        let tally = Arc::new(Tally::default());
        let limits = ServeLimits { max_listen_streams_per_agent: 1, max_subscriptions_per_agent: 2, ..ServeLimits::default() };
        let _s = tally.hold("a", Holding::ListenStream, &limits).unwrap();
        assert_eq!(tally.hold("a", Holding::ListenStream, &limits).unwrap_err(), Full::Agent(1));
        let _t = tally.hold("b", Holding::ListenStream, &limits).unwrap();
        let _u = (tally.hold("a", Holding::Subscription, &limits).unwrap(), tally.hold("a", Holding::Subscription, &limits).unwrap());
        assert_eq!(tally.hold("a", Holding::Subscription, &limits).unwrap_err(), Full::Agent(2));
        assert_eq!(tally.status().agents["a"], super::AgentHolds { sessions: 0, listen_streams: 1, subscriptions: 2 });
        assert_eq!(tally.status().sessions, 0);
    }
}
