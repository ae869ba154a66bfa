//! The bytes of resource reads in flight, every client's together: a file of a served
//! skill (seam's own or an imported one) and a `resources/read` relayed from an MCP
//! mount each take their size from one budget before their bytes are held, and give
//! it back once their answer has been sent. Past the budget a read waits its turn; it
//! is not refused. Without it, many concurrent reads of a large file each held several
//! copies of it at once, and memory grew with the number of readers.
//!
//! A read larger than the whole budget takes all of it (it runs alone). One request
//! takes from the budget once, so no request holds a part while waiting for more.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use tokio::sync::Semaphore;

/// The bytes of reads in flight at once, every client's together: at least the largest
/// file a skill serves (`MAX_BYTES` of seam-skills, 16 MiB), so that one always fits.
pub const MAX_READ_BYTES_IN_FLIGHT: u32 = 32 << 20;

/// The budget reads take their bytes from (one per deployment).
#[derive(Default)]
pub struct ReadBudget(Arc<Budget>);

struct Budget {
    bytes: Semaphore,
    /// Reads waiting for their turn now.
    waiting: AtomicUsize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { bytes: Semaphore::new(MAX_READ_BYTES_IN_FLIGHT as usize), waiting: AtomicUsize::new(0) }
    }
}

impl ReadBudget {
    /// A hold for one request's reads, empty until a read takes from it.
    pub fn hold(&self) -> ReadHold {
        ReadHold(Arc::new(Held { budget: self.0.clone(), bytes: AtomicU32::new(0) }))
    }

    /// The bytes taken now.
    pub fn taken(&self) -> u64 {
        u64::from(MAX_READ_BYTES_IN_FLIGHT) - self.0.bytes.available_permits() as u64
    }

    /// The reads waiting for their turn now.
    pub fn waiting(&self) -> usize {
        self.0.waiting.load(Ordering::Relaxed)
    }
}

/// What one request's read holds of the budget, until this and every clone of it are
/// dropped: the request's handler takes the bytes; whoever sends its answer keeps a
/// clone until the answer is sent (a clone travels in the request's HTTP extensions).
#[derive(Clone)]
pub struct ReadHold(Arc<Held>);

struct Held {
    budget: Arc<Budget>,
    bytes: AtomicU32,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.bytes.add_permits(*self.bytes.get_mut() as usize);
    }
}

impl std::fmt::Debug for ReadHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReadHold({} bytes)", self.held())
    }
}

impl ReadHold {
    /// Takes `bytes` (at most the whole budget) for this request's read, waiting until they
    /// are free. A hold takes once: a second take is ignored, so that no request holds a
    /// part of the budget while it waits for more.
    pub async fn take(&self, bytes: u64) {
        if self.held() > 0 {
            return;
        }
        let wanted = u32::try_from(bytes).unwrap_or(u32::MAX).clamp(1, MAX_READ_BYTES_IN_FLIGHT);
        let budget = &self.0.budget;
        // Counted as waiting for as long as it waits, however the wait ends.
        let waiting = crate::runtime::CountedIn::new(&budget.waiting);
        let taken = budget.bytes.acquire_many(wanted).await;
        drop(waiting);
        // The semaphore is never closed; its permits go back when the last clone of the hold goes.
        if let Ok(permit) = taken {
            permit.forget();
            self.0.bytes.store(wanted, Ordering::Relaxed);
        }
    }

    /// The bytes this hold has taken.
    pub fn held(&self) -> u64 {
        u64::from(self.0.bytes.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_READ_BYTES_IN_FLIGHT, ReadBudget};

    /// The budget at its bound: reads that fit run together, the next waits until one is
    /// done with its answer, and a read larger than the budget takes all of it.
    #[tokio::test]
    async fn reads_wait_their_turn_past_the_budget() {
        let budget = ReadBudget::default();
        let half = u64::from(MAX_READ_BYTES_IN_FLIGHT) / 2;
        let (first, second, third) = (budget.hold(), budget.hold(), budget.hold());
        first.take(half).await;
        second.take(half).await;
        assert_eq!(budget.taken(), u64::from(MAX_READ_BYTES_IN_FLIGHT), "at the bound");
        let waiting = tokio::spawn({
            let third = third.clone();
            async move { third.take(1).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one byte past the bound waits");
        let answer_sent = first.clone();
        drop(first);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "until every clone of the hold is gone: the answer is still being sent");
        drop(answer_sent);
        waiting.await.unwrap();
        assert_eq!(third.held(), 1);
        drop((second, third));
        let huge = budget.hold();
        huge.take(u64::MAX).await;
        assert_eq!(huge.held(), u64::from(MAX_READ_BYTES_IN_FLIGHT), "larger than the budget: all of it");
    }
}
