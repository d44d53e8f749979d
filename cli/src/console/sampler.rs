//! The charts' history: a thread samples the store's overview every
//! `sample_every` into a ring of the last `samples` points, in memory.
//!
//! Invariants: the thread holds the console only weakly and ends within
//! one interval of the router's last clone being dropped; a failed sample
//! is recorded as the last error and leaves a gap, never a zero.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

use super::{Console, Shared};

/// One point of the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sample {
    /// The store's clock (ms).
    pub(crate) at_ms: u64,
    pub(crate) pending: usize,
    pub(crate) in_flight: usize,
    pub(crate) dead: usize,
    /// How late the most overdue pending item was (ms; 0 when none was due).
    pub(crate) lag_ms: u64,
}

#[derive(Default)]
struct Ring {
    points: VecDeque<Sample>,
    last_error: Option<String>,
}

/// The samples so far.
pub(crate) struct History {
    cap: usize,
    ring: Mutex<Ring>,
}

impl History {
    pub(crate) fn new(cap: usize) -> Arc<History> {
        Arc::new(History {
            cap,
            ring: Mutex::new(Ring::default()),
        })
    }

    fn push(&self, sample: Result<Sample, String>) {
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        match sample {
            Ok(s) => {
                if ring.points.len() == self.cap {
                    ring.points.pop_front();
                }
                ring.points.push_back(s);
                ring.last_error = None;
            }
            Err(e) => ring.last_error = Some(e),
        }
    }

    /// The points, oldest first, and the last sampling error if the last
    /// sample failed.
    pub(crate) fn read(&self) -> (Vec<Sample>, Option<String>) {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        (
            ring.points.iter().copied().collect(),
            ring.last_error.clone(),
        )
    }
}

/// Takes one sample of `console`'s store.
fn sample(console: &Console) -> Result<Sample, String> {
    let o = console.store.overview().map_err(|e| e.to_string())?;
    Ok(Sample {
        at_ms: o.now_ms,
        pending: o.pending,
        in_flight: o.in_flight,
        dead: o.dead,
        lag_ms: o.lag_ms.unwrap_or(0),
    })
}

/// Starts the sampler thread of `console`.
pub(crate) fn start(console: &Shared) {
    let weak: Weak<Console> = Arc::downgrade(console);
    let every = console.config.sample_every;
    let spawned = std::thread::Builder::new()
        .name("schedpool-console-sampler".into())
        .spawn(move || loop {
            let Some(console) = weak.upgrade() else {
                return;
            };
            console.history.push(sample(&console));
            drop(console);
            std::thread::sleep(every);
        });
    if let Err(e) = spawned {
        console
            .history
            .push(Err(format!("the sampler thread did not start: {e}")));
    }
}
