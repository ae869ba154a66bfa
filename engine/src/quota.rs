//! `quota`: what an agent's calls and requests may use, per rule: calls per window (a
//! token bucket with a burst), calls at once, and output bytes per window. Counted per
//! agent, whatever the client's era or session (`chain::CallerState`), and kept across
//! a reload for each rule that stays as written (counters are keyed by the rule's digest).
//!
//! The bucket is written here, not taken from a rate-limit crate: output bytes are known
//! only after a call, so a window may go into debt that later calls wait out, and the
//! clock is tokio's, so tests run on a paused one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use globset::GlobMatcher;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use tokio::time::{Duration, Instant};

use crate::offers::MountRequest;
use crate::units::{Duration as Written, Size};

/// One rule as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuotaDoc {
    /// The calls it counts, by tool name as agents' rules name tools (`mcp__<mount>__<tool>`,
    /// globs allowed); without it, every request it covers (calls, reads, `prompts/get`,
    /// completions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// Only requests served by this mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
    /// Calls per window: `max` every `per`, up to `burst` at once (`max` without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<CallRate>,
    /// Calls running at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100_000))]
    pub concurrent: Option<u32>,
    /// Bytes of results per window (a result's text and data as sent), `max` every `per`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<ByteRate>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallRate {
    #[schemars(range(min = 1, max = 1_000_000_000))]
    pub max: u64,
    pub per: Written,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000_000))]
    pub burst: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ByteRate {
    pub max: Size,
    pub per: Written,
}

/// One rule, resolved: what it covers, and its digest (what its counters are kept under).
#[derive(Debug)]
pub struct QuotaRule {
    pub doc: QuotaDoc,
    /// Where it is written (`/agents/a/quota/0`), to name it.
    pub at: String,
    pub digest: String,
    tools: Option<GlobMatcher>,
}

impl QuotaRule {
    pub fn new(doc: QuotaDoc, at: String, tools: Option<GlobMatcher>) -> QuotaRule {
        let digest = crate::lock::digest(&serde_json::to_value(&doc).unwrap_or(Json::Null));
        QuotaRule { doc, at, digest, tools }
    }

    /// Whether it counts `request`, served by `mount` (`None`: a service's tool).
    /// Requests about tasks are never counted: they poll what a counted call made.
    pub fn covers(&self, request: &MountRequest, ruled_as: &str, mount: Option<&str>) -> bool {
        if matches!(request, MountRequest::Task { .. }) {
            return false;
        }
        if self.doc.mount.as_deref().is_some_and(|m| Some(m) != mount) {
            return false;
        }
        match (&self.tools, request) {
            (None, _) => true,
            (Some(glob), MountRequest::CallTool { .. }) => glob.is_match(ruled_as),
            (Some(_), _) => false,
        }
    }

    /// In words, for a refusal: `quota 1 of agent `a` (mcp__f__*: 2 calls per 1m)`.
    fn describe(&self) -> String {
        let mut limits = Vec::new();
        if let Some(rate) = self.doc.calls {
            limits.push(format!("{} calls per {}", rate.max, rate.per));
        }
        if let Some(n) = self.doc.concurrent {
            limits.push(format!("{n} at once"));
        }
        if let Some(rate) = self.doc.output_bytes {
            limits.push(format!("{} of output per {}", rate.max, rate.per));
        }
        format!("the quota at {} ({})", self.at, limits.join(", "))
    }
}

/// A token bucket on tokio's clock: `capacity` tokens, refilled at `rate` a second. It may
/// be spent into debt (output bytes are known after the call), which later takes wait out.
#[derive(Debug)]
struct Bucket {
    capacity: f64,
    rate: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn new(capacity: u64, max: u64, per: Written, now: Instant) -> Bucket {
        let rate = max as f64 / per.to_std().as_secs_f64().max(f64::MIN_POSITIVE);
        Bucket { capacity: capacity as f64, rate, tokens: capacity as f64, at: now }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.capacity);
        self.at = now;
    }

    /// How long until `n` tokens are there (zero: now).
    fn wait_for(&mut self, n: f64, now: Instant) -> Duration {
        self.refill(now);
        if self.tokens >= n { Duration::ZERO } else { Duration::from_secs_f64((n - self.tokens) / self.rate) }
    }

    fn spend(&mut self, n: f64, now: Instant) {
        self.refill(now);
        self.tokens -= n;
    }
}

/// One rule's counters for one agent.
#[derive(Debug)]
struct Usage {
    calls: Option<Bucket>,
    bytes: Option<Bucket>,
    running: u32,
}

/// One agent's counters, by rule digest.
#[derive(Debug, Default)]
pub struct Quotas(Mutex<HashMap<String, Usage>>);

/// A request's place in its rules' `concurrent` counts, given back when it is dropped.
pub struct Running {
    quotas: Arc<crate::chain::CallerState>,
    digests: Vec<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut usage = self.quotas.quotas.0.lock().expect("quota lock");
        for digest in &self.digests {
            if let Some(usage) = usage.get_mut(digest) {
                usage.running = usage.running.saturating_sub(1);
            }
        }
    }
}

/// Why a request is past a quota: the rule, and how long until it may be sent again.
#[derive(Debug, Clone, PartialEq)]
pub struct Exceeded {
    pub message: String,
    /// `None`: when one of the calls running ends (a `concurrent` limit).
    pub retry_after: Option<Duration>,
}

impl Exceeded {
    pub fn data(&self) -> Json {
        json!({ "retry_after_ms": self.retry_after.map(|d| d.as_millis() as u64) })
    }
}

impl Quotas {
    /// Takes a place for a request that `rules` cover, in every one of them or none: the
    /// first rule it is past, and when to retry. Counters of rules no longer in `all` (the
    /// agent's rules now) are dropped.
    pub fn take(
        state: &Arc<crate::chain::CallerState>,
        covering: &[&QuotaRule],
        all: &[Arc<QuotaRule>],
        now: Instant,
    ) -> Result<Option<Running>, Exceeded> {
        if covering.is_empty() {
            return Ok(None);
        }
        let mut usage = state.quotas.0.lock().expect("quota lock");
        if usage.len() > all.len() || usage.keys().any(|d| !all.iter().any(|r| &r.digest == d)) {
            usage.retain(|digest, _| all.iter().any(|rule| &rule.digest == digest));
        }
        // Checked first, so that a refusal spends nothing.
        for rule in covering {
            let counters = usage.entry(rule.digest.clone()).or_insert_with(|| Usage::new(&rule.doc, now));
            let wait = counters.calls.as_mut().map_or(Duration::ZERO, |b| b.wait_for(1.0, now));
            // A window's bytes are spent after its calls: the next waits until one is back.
            let owed = counters.bytes.as_mut().map_or(Duration::ZERO, |b| b.wait_for(1.0, now));
            let wait = wait.max(owed);
            if !wait.is_zero() {
                return Err(Exceeded { message: format!("past {}: retry in {}", rule.describe(), words(wait)), retry_after: Some(wait) });
            }
            if rule.doc.concurrent.is_some_and(|max| counters.running >= max) {
                return Err(Exceeded {
                    message: format!("past {}: retry when one of its calls has ended", rule.describe()),
                    retry_after: None,
                });
            }
        }
        for rule in covering {
            let counters = usage.get_mut(&rule.digest).expect("made above");
            if let Some(bucket) = counters.calls.as_mut() {
                bucket.spend(1.0, now);
            }
            counters.running += 1;
        }
        Ok(Some(Running { quotas: state.clone(), digests: covering.iter().map(|r| r.digest.clone()).collect() }))
    }

    /// Spends `bytes` of output in each covering rule that counts them.
    pub fn spent(&self, covering: &[&QuotaRule], bytes: u64, now: Instant) {
        let mut usage = self.0.lock().expect("quota lock");
        for rule in covering {
            if let Some(bucket) = usage.get_mut(&rule.digest).and_then(|u| u.bytes.as_mut()) {
                bucket.spend(bytes as f64, now);
            }
        }
    }

    /// Each rule's use now, for `/status`: calls left in the bucket, calls running, bytes left.
    pub fn usage(&self, rules: &[Arc<QuotaRule>], now: Instant) -> Vec<Json> {
        let mut usage = self.0.lock().expect("quota lock");
        rules
            .iter()
            .map(|rule| {
                let counters = usage.entry(rule.digest.clone()).or_insert_with(|| Usage::new(&rule.doc, now));
                let left = |b: &mut Option<Bucket>| {
                    b.as_mut().map(|b| {
                        b.refill(now);
                        b.tokens.floor() as i64
                    })
                };
                json!({
                    "rule": rule.at,
                    "calls_left": left(&mut counters.calls),
                    "running": counters.running,
                    "concurrent": rule.doc.concurrent,
                    "output_bytes_left": left(&mut counters.bytes),
                })
            })
            .collect()
    }
}

impl Usage {
    fn new(doc: &QuotaDoc, now: Instant) -> Usage {
        Usage {
            calls: doc.calls.map(|r| Bucket::new(r.burst.unwrap_or(r.max), r.max, r.per, now)),
            bytes: doc.output_bytes.map(|r| Bucket::new(r.max.bytes(), r.max.bytes(), r.per, now)),
            running: 0,
        }
    }
}

/// A wait in words, rounded up to the second (`3s`, `2m 5s`).
fn words(wait: Duration) -> String {
    humantime::format_duration(Duration::from_secs(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::CallerState;

    fn rule(doc: Json) -> Arc<QuotaRule> {
        Arc::new(QuotaRule::new(serde_json::from_value(doc).unwrap(), "/quota/0".into(), None))
    }

    fn take(state: &Arc<CallerState>, rule: &Arc<QuotaRule>) -> Result<Option<Running>, Exceeded> {
        Quotas::take(state, &[&**rule], std::slice::from_ref(rule), Instant::now())
    }

    /// `calls`: at the limit every call is let through, one past it is refused with the
    /// wait until the bucket has one again, and after that wait it is let through.
    #[tokio::test(start_paused = true)]
    async fn calls_per_window_at_the_limit_and_one_past() {
        let state = Arc::new(CallerState::default());
        let two_a_minute = rule(json!({ "calls": { "max": 2, "per": "1m" } }));
        assert!(take(&state, &two_a_minute).is_ok());
        assert!(take(&state, &two_a_minute).is_ok());
        let past = take(&state, &two_a_minute).err().expect("one past the limit");
        assert_eq!(past.retry_after, Some(Duration::from_secs(30)), "{past:?}");
        assert!(past.message.contains("2 calls per 1m") && past.message.contains("retry in 30s"), "{}", past.message);
        assert_eq!(past.data(), json!({ "retry_after_ms": 30_000 }));
        tokio::time::advance(Duration::from_secs(29)).await;
        assert!(take(&state, &two_a_minute).is_err(), "not yet");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(take(&state, &two_a_minute).is_ok(), "one call's worth refilled");

        // A burst smaller than the window's calls: at most that many at once.
        let bursty = rule(json!({ "calls": { "max": 60, "per": "1m", "burst": 2 } }));
        assert!(take(&state, &bursty).is_ok() && take(&state, &bursty).is_ok());
        assert_eq!(take(&state, &bursty).err().unwrap().retry_after, Some(Duration::from_secs(1)));
    }

    /// `concurrent`: a place is held for as long as the request runs; at the limit the
    /// next is refused with no time to wait (a running one must end), and gets in once one does.
    #[tokio::test(start_paused = true)]
    async fn calls_at_once_at_the_limit_and_one_past() {
        let state = Arc::new(CallerState::default());
        let two_at_once = rule(json!({ "concurrent": 2 }));
        let first = take(&state, &two_at_once).unwrap();
        let _second = take(&state, &two_at_once).unwrap();
        let past = take(&state, &two_at_once).err().expect("one past the limit");
        assert_eq!(past.retry_after, None);
        assert_eq!(past.data(), json!({ "retry_after_ms": null }));
        drop(first);
        assert!(take(&state, &two_at_once).is_ok());
    }

    /// `output_bytes`: counted after the call; a window spent past its end is waited out.
    #[tokio::test(start_paused = true)]
    async fn output_bytes_spent_past_the_window_are_waited_out() {
        let state = Arc::new(CallerState::default());
        let hundred_a_second = rule(json!({ "output_bytes": { "max": "100B", "per": "1s" } }));
        assert!(take(&state, &hundred_a_second).is_ok());
        state.quotas.spent(&[&*hundred_a_second], 100, Instant::now());
        let spent = take(&state, &hundred_a_second).err().expect("the window is spent");
        assert!(spent.retry_after.is_some_and(|wait| !wait.is_zero() && wait <= Duration::from_millis(10)), "{spent:?}");
        tokio::time::advance(Duration::from_millis(20)).await;
        assert!(take(&state, &hundred_a_second).is_ok(), "two bytes' worth back");
        state.quotas.spent(&[&*hundred_a_second], 250, Instant::now());
        let owed = take(&state, &hundred_a_second).err().unwrap().retry_after.unwrap();
        assert!(owed > Duration::from_millis(2400) && owed <= Duration::from_millis(2500), "in debt: {owed:?}");
    }

    /// A rule that stays as written keeps its counters (they are the rule digest's); one
    /// that is gone from the agent's rules lets its go.
    #[tokio::test(start_paused = true)]
    async fn counters_follow_the_rule_as_written() {
        let state = Arc::new(CallerState::default());
        let one = rule(json!({ "calls": { "max": 1, "per": "1h" } }));
        assert!(take(&state, &one).is_ok());
        let same = rule(json!({ "calls": { "max": 1, "per": "1h" } }));
        assert!(take(&state, &same).is_err(), "the same rule, built again, keeps its count");
        let other = rule(json!({ "calls": { "max": 1, "per": "2h" } }));
        assert!(take(&state, &other).is_ok());
        assert!(take(&state, &same).is_ok(), "dropped when the agent's rules were only `other`");
    }
}
