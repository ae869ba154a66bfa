//! The traffic the status page shows: per agent, mount (or service) and tool, the tool
//! calls of the last five minutes, read from the call stage by a hook (`Traffic`). Each
//! row keeps the window as ten-second slices, each a count, an error count and a
//! histogram of durations on a log scale (a quarter octave a bucket), so that a row's
//! memory is fixed whatever the rate: p50 and p99 are bucket bounds, within 19% of the
//! true quantile. A row with no call in the window is dropped, so the table is bounded by
//! the live catalogs (a call that routed names a tool its agent is offered).
//!
//! The last errors of a row keep their code, and the message of an error seam made (a
//! server's own words are not kept: they may quote anything it was sent), with every
//! string the call's arguments held cut out of it (each line of it too, and its
//! JSON-escaped form) and then secrets masked as seam masks them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use seam_engine::chain::{Answer, Answered, Hook, Passed};
use seam_engine::deploy::Source;
use seam_engine::offers::MountRequest;

/// How far back the page looks.
pub const WINDOW: Duration = Duration::from_secs(300);
/// One slice of the window.
const SLICE: Duration = Duration::from_secs(10);
/// How far back calls per second are counted: the last minute, so that the rate follows the traffic.
const RATE_WINDOW: Duration = Duration::from_secs(60);
/// Duration buckets: bucket `i` holds durations up to `FIRST_BOUND · 2^(i/4)`; the last holds the rest.
const BUCKETS: usize = 96;
const FIRST_BOUND: Duration = Duration::from_micros(100);
/// The last errors a row keeps.
pub const LAST_ERRORS: usize = 5;
/// The most characters of an error's message kept.
const MESSAGE_CHARS: usize = 160;

/// One ten-second slice of a row.
struct Slice {
    /// Which slice since the table's start (`Traffic::epoch`).
    index: u64,
    calls: u32,
    errors: u32,
    buckets: [u32; BUCKETS],
}

/// An error a call ended with.
#[derive(Clone, Debug)]
pub struct LastError {
    pub at: std::time::SystemTime,
    /// seam's code, `tool_error` (a server's error result), or a JSON-RPC error's code.
    pub code: String,
    pub message: String,
}

#[derive(Default)]
struct Row {
    slices: VecDeque<Slice>,
    last_errors: VecDeque<LastError>,
}

/// A row as the page shows it.
#[derive(Clone, Debug)]
pub struct Shown {
    pub agent: String,
    /// The mount's id, or the service's name for its fixed tools (`web`).
    pub source: String,
    pub tool: String,
    pub calls_per_second: f64,
    pub calls: u64,
    pub errors: u64,
    pub p50: Duration,
    pub p99: Duration,
    /// Newest first.
    pub last_errors: Vec<LastError>,
}

/// The call stage's traffic over the last `WINDOW` (a hook, outermost).
pub struct Traffic {
    epoch: Instant,
    rows: Mutex<BTreeMap<(String, String, String), Row>>,
    /// The slice at which the rows were last swept.
    swept: std::sync::atomic::AtomicU64,
}

impl Default for Traffic {
    fn default() -> Traffic {
        Traffic { epoch: Instant::now(), rows: Mutex::default(), swept: Default::default() }
    }
}

/// Whether slice `index` is one of the `window`'s last slices at slice `now`.
fn in_window(index: u64, now: u64, window: Duration) -> bool {
    index + window.as_secs() / SLICE.as_secs() > now
}

/// The bucket a duration falls in.
fn bucket(took: Duration) -> usize {
    if took <= FIRST_BOUND {
        return 0;
    }
    let quarters = (took.as_secs_f64() / FIRST_BOUND.as_secs_f64()).log2() * 4.0;
    // A bound itself, give or take a bound's rounding to nanoseconds, is in its own bucket.
    ((quarters - 1e-3).ceil() as usize).min(BUCKETS - 1)
}

/// The upper bound of bucket `i`.
fn bound(i: usize) -> Duration {
    FIRST_BOUND.mul_f64(2f64.powf(i as f64 / 4.0))
}

/// `message` with each string argument of `arguments` (of 3 characters or more: each
/// of its lines too, and its JSON-escaped form) cut out of it, then its first line with
/// secrets masked, at most `MESSAGE_CHARS` characters.
fn without_arguments(message: &str, arguments: &serde_json::Map<String, serde_json::Value>) -> String {
    let mut cut: Vec<String> = Vec::new();
    let mut stack: Vec<&serde_json::Value> = arguments.values().collect();
    while let Some(value) = stack.pop() {
        match value {
            serde_json::Value::String(s) => {
                // The JSON string without its own two quotes (an escaped one at its end stays).
                let escaped = |text: &str| {
                    let json = serde_json::to_string(text).unwrap_or_default();
                    json.get(1..json.len().saturating_sub(1)).unwrap_or_default().to_owned()
                };
                for form in std::iter::once(s.as_str()).chain(s.lines()) {
                    cut.extend([form.to_owned(), escaped(form)].into_iter().filter(|f| f.chars().count() >= 3));
                }
            }
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(fields) => stack.extend(fields.values()),
            _ => {}
        }
    }
    // Longest first, so that a value inside another is not cut out of it first.
    cut.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut whole = message.to_owned();
    for s in &cut {
        whole = whole.replace(s.as_str(), "…");
    }
    let mut shown = seam_engine::redact::text(whole.lines().next().unwrap_or_default()).into_owned();
    if seam_engine::runtime::truncate_chars(&mut shown, MESSAGE_CHARS as u64) {
        shown.push('…');
    }
    shown
}

impl Traffic {
    fn slice_index(&self, at: Instant) -> u64 {
        at.duration_since(self.epoch).as_secs() / SLICE.as_secs()
    }

    fn record(&self, key: (String, String, String), took: Duration, error: Option<LastError>) {
        let mut rows = self.rows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Read under the lock, so that slices are pushed in order.
        let now = self.slice_index(Instant::now());
        // Once a slice, rows with no call left in the window go, whether or not a page looks.
        if self.swept.swap(now, std::sync::atomic::Ordering::Relaxed) != now {
            rows.retain(|_, row| row.slices.back().is_some_and(|s| in_window(s.index, now, WINDOW)));
        }
        let row = rows.entry(key).or_default();
        if row.slices.back().is_none_or(|s| s.index != now) {
            row.slices.push_back(Slice { index: now, calls: 0, errors: 0, buckets: [0; BUCKETS] });
        }
        while row.slices.front().is_some_and(|s| !in_window(s.index, now, WINDOW)) {
            row.slices.pop_front();
        }
        let slice = row.slices.back_mut().expect("pushed above");
        slice.calls += 1;
        slice.buckets[bucket(took)] += 1;
        if let Some(error) = error {
            slice.errors += 1;
            if row.last_errors.len() == LAST_ERRORS {
                row.last_errors.pop_back();
            }
            row.last_errors.push_front(error);
        }
    }

    /// Every row with a call in the window, in (agent, source, tool) order.
    pub fn shown(&self) -> Vec<Shown> {
        let now = Instant::now();
        let current = self.slice_index(now);
        // The rate's span: the slices counted (the current one as far as it has gone), or as
        // much of that as seam has run.
        let elapsed = now.duration_since(self.epoch);
        let within = elapsed.saturating_sub(SLICE * current as u32);
        let rate_span = elapsed.min(RATE_WINDOW - SLICE + within).max(Duration::from_secs(1));
        let mut rows = self.rows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        rows.retain(|_, row| {
            row.slices.retain(|s| in_window(s.index, current, WINDOW));
            !row.slices.is_empty()
        });
        rows.iter()
            .map(|((agent, source, tool), row)| {
                let mut buckets = [0u64; BUCKETS];
                let (mut calls, mut errors, mut recent) = (0u64, 0u64, 0u64);
                for slice in &row.slices {
                    calls += u64::from(slice.calls);
                    errors += u64::from(slice.errors);
                    if in_window(slice.index, current, RATE_WINDOW) {
                        recent += u64::from(slice.calls);
                    }
                    for (total, n) in buckets.iter_mut().zip(slice.buckets) {
                        *total += u64::from(n);
                    }
                }
                let quantile = |q: f64| {
                    let wanted = ((calls as f64) * q).ceil().max(1.0) as u64;
                    let mut seen = 0;
                    let at = buckets.iter().position(|n| {
                        seen += n;
                        seen >= wanted
                    });
                    bound(at.unwrap_or(BUCKETS - 1))
                };
                Shown {
                    agent: agent.clone(),
                    source: source.clone(),
                    tool: tool.clone(),
                    calls_per_second: recent as f64 / rate_span.as_secs_f64(),
                    calls,
                    errors,
                    p50: quantile(0.5),
                    p99: quantile(0.99),
                    last_errors: row.last_errors.iter().cloned().collect(),
                }
            })
            .collect()
    }
}

impl Hook for Traffic {
    fn after(&self, passed: &Passed<'_>, answer: &mut Answered) {
        let MountRequest::CallTool { name, arguments } = passed.request else { return };
        // A task's result given later: its call was counted when it made the task.
        if passed.task_result {
            return;
        }
        let source = match passed.source {
            Source::Mount(id) => id.clone(),
            Source::Service(name) => (*name).to_owned(),
            Source::Seam => "seam".to_owned(),
        };
        // A server's own words are not kept (`message` is empty): they may quote anything.
        let error = match answer {
            Err(seam_engine::offers::RequestError::Upstream { code, .. }) => {
                Some(LastError { at: std::time::SystemTime::now(), code: code.to_string(), message: String::new() })
            }
            Err(e) => Some(LastError {
                at: std::time::SystemTime::now(),
                code: "error".to_owned(),
                message: without_arguments(&e.to_string(), arguments),
            }),
            Ok(Answer::Tool(output)) if output.is_error => {
                let message = match output.code {
                    Some(_) => {
                        let mut text = output.clone();
                        text.read();
                        without_arguments(text.content.iter().find_map(|c| c["text"].as_str()).unwrap_or_default(), arguments)
                    }
                    None => String::new(),
                };
                Some(LastError { at: std::time::SystemTime::now(), code: output.code.map_or("tool_error", |c| c.code).to_owned(), message })
            }
            Ok(_) => None,
        };
        self.record((passed.caller.agent.clone(), source, name.clone()), passed.took, error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_bounds() {
        assert_eq!(bucket(Duration::ZERO), 0);
        assert_eq!(bucket(FIRST_BOUND), 0);
        for i in 1..BUCKETS - 1 {
            assert_eq!(bucket(bound(i)), i, "a bound is in its own bucket");
            assert_eq!(bucket(bound(i) + bound(i) / 1000), i + 1, "and a thousandth past it the next");
        }
        assert_eq!(bucket(Duration::from_secs(100_000)), BUCKETS - 1, "the last holds the rest");
    }

    #[test]
    fn a_slice_is_in_the_window_for_its_last_slice_and_not_one_after() {
        let slices = WINDOW.as_secs() / SLICE.as_secs();
        assert!(in_window(7, 7 + slices - 1, WINDOW), "the window's oldest slice");
        assert!(!in_window(7, 7 + slices, WINDOW), "one past it");
    }

    #[test]
    fn a_message_is_kept_to_its_limit_and_cut_one_past_it() {
        let none = serde_json::Map::new();
        let at_limit = "x".repeat(MESSAGE_CHARS);
        assert_eq!(without_arguments(&at_limit, &none), at_limit);
        let past = "x".repeat(MESSAGE_CHARS + 1);
        assert_eq!(without_arguments(&past, &none), format!("{at_limit}…"));
    }

    #[test]
    fn quantiles_are_within_a_bucket() {
        let traffic = Traffic::default();
        let key = || ("a".to_owned(), "m".to_owned(), "t".to_owned());
        for ms in 1..=100u64 {
            traffic.record(key(), Duration::from_millis(ms), None);
        }
        let row = traffic.shown().pop().unwrap();
        assert_eq!((row.calls, row.errors), (100, 0));
        let within = |got: Duration, want: Duration| got >= want && got.as_secs_f64() <= want.as_secs_f64() * 2f64.powf(0.25);
        assert!(within(row.p50, Duration::from_millis(50)), "{:?}", row.p50);
        assert!(within(row.p99, Duration::from_millis(99)), "{:?}", row.p99);
    }

    #[test]
    fn an_error_keeps_its_code_and_no_argument() {
        let traffic = Traffic::default();
        let arguments = serde_json::json!({
            "url": "https://example.test/private?token=abc", "n": 3, "nested": ["swordfish-7"], "lines": "first half\nsecret \"tail\""
        });
        let message = "WEB_FETCH_FAILED: `https://example.test/private?token=abc` failed: swordfish-7 rejected \
            first half; \"secret \\\"tail\\\"\"\nsecond line";
        let error = LastError {
            at: std::time::SystemTime::now(),
            code: "WEB_FETCH_FAILED".to_owned(),
            message: without_arguments(message, arguments.as_object().unwrap()),
        };
        assert_eq!(error.message, "WEB_FETCH_FAILED: `…` failed: … rejected …; \"…\"", "each line, and the escaped form, cut");
        for n in 0..=LAST_ERRORS {
            let mut e = error.clone();
            e.code = format!("SEAM_CODE_{n}");
            traffic.record(("a".into(), "m".into(), "t".into()), Duration::from_millis(1), Some(e));
        }
        let row = traffic.shown().pop().unwrap();
        assert_eq!(row.errors, LAST_ERRORS as u64 + 1);
        let codes: Vec<&str> = row.last_errors.iter().map(|e| e.code.as_str()).collect();
        assert_eq!(codes, ["SEAM_CODE_5", "SEAM_CODE_4", "SEAM_CODE_3", "SEAM_CODE_2", "SEAM_CODE_1"], "the newest, at most {LAST_ERRORS}");
    }
}
