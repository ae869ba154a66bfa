//! A request's budget clock. A tool's `timeout` and a mount's `call_timeout` bound the
//! time a call spends working; the time it spends waiting for its client to answer a
//! server's question (an elicitation, a sampling, a 2026-07-28 client's retry) is a
//! person's, and `serve.input_timeout` bounds that wait instead. The clock runs while
//! the request works and stops while any of its questions waits for the client.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// The budget clock of one request, shared by everything that times it or asks for it.
#[derive(Clone, Debug)]
pub struct CallClock(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    state: Mutex<Stops>,
    /// Rung when a question starts or ends: a budget being waited out looks again.
    changed: tokio::sync::Notify,
}

#[derive(Debug)]
struct Stops {
    started: Instant,
    /// Time the clock stood still, questions that have been answered.
    stopped: Duration,
    /// Questions waiting for the client now, and since when the first of them waits.
    waiting: usize,
    since: Option<Instant>,
}

impl Default for CallClock {
    fn default() -> Self {
        let stops = Stops { started: Instant::now(), stopped: Duration::ZERO, waiting: 0, since: None };
        CallClock(Arc::new(Shared { state: Mutex::new(stops), changed: tokio::sync::Notify::new() }))
    }
}

/// The clock stands still while this lives: one question waits for the client.
#[must_use = "the clock runs again when this is dropped"]
pub struct Stopped(CallClock);

impl Drop for Stopped {
    fn drop(&mut self) {
        let mut stops = self.0.0.state.lock().expect("clock lock");
        stops.waiting -= 1;
        if stops.waiting == 0
            && let Some(since) = stops.since.take()
        {
            stops.stopped += since.elapsed();
        }
        drop(stops);
        self.0.0.changed.notify_waiters();
    }
}

impl CallClock {
    /// Stops the clock until what this returns is dropped (a question is put to the client).
    pub fn stop(&self) -> Stopped {
        let mut stops = self.0.state.lock().expect("clock lock");
        stops.waiting += 1;
        stops.since.get_or_insert_with(Instant::now);
        drop(stops);
        self.0.changed.notify_waiters();
        Stopped(self.clone())
    }

    /// How long the request has worked: the time since it started, less the time it waited for its client.
    pub fn worked(&self) -> Duration {
        let stops = self.0.state.lock().expect("clock lock");
        let waiting = stops.since.map_or(Duration::ZERO, |since| since.elapsed());
        stops.started.elapsed().saturating_sub(stops.stopped + waiting)
    }

    /// Resolves once the request has worked `budget` (never while a question waits).
    pub async fn spent(&self, budget: Duration) {
        loop {
            let changed = self.0.changed.notified();
            let mut changed = std::pin::pin!(changed);
            // Registered before the state is read: a question that starts after the read still wakes this.
            changed.as_mut().enable();
            let waiting = self.0.state.lock().expect("clock lock").waiting > 0;
            if waiting {
                changed.await;
                continue;
            }
            let left = budget.saturating_sub(self.worked());
            if left.is_zero() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(left) => {}
                _ = changed => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget runs out after the time worked, not counting the time a question waited.
    #[tokio::test(start_paused = true)]
    async fn a_budget_does_not_count_the_time_a_question_waits() {
        let clock = CallClock::default();
        let spent = tokio::spawn({
            let clock = clock.clone();
            async move {
                clock.spent(Duration::from_secs(10)).await;
                Instant::now()
            }
        });
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(4)).await;
        let first = clock.stop();
        let second = clock.stop();
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(first);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(!spent.is_finished(), "a question still waits: the clock stands");
        drop(second);
        let ended = spent.await.unwrap();
        assert_eq!(ended - start, Duration::from_secs(70), "4s worked, 60s stopped, 6s worked");
        assert_eq!(clock.worked(), Duration::from_secs(10));
    }

    /// With no question asked, the budget is the plain time since the request started.
    #[tokio::test(start_paused = true)]
    async fn without_questions_a_budget_is_wall_time() {
        let clock = CallClock::default();
        let start = Instant::now();
        clock.spent(Duration::from_millis(1500)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(1500));
    }
}
