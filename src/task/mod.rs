//! Tasks: the header every task starts with and its state word, the result
//! cell, the thin counted pointer that holds a task, and the bodies (one
//! shot, periodic with its policies and controls, idle timer).
//!
//! Layers inside, each using only those before it: [`policy`] (the public
//! periodic policies) and [`kind`], [`calendar`] (a calendar task's plan:
//! its schedule and wall-clock fire), [`cadence`] (a periodic task's
//! cadence, controls and next-run arithmetic), [`header`] (the header, its
//! state word and the `Job` trait), [`completion`] (the result cell),
//! [`ptr`] (the pointer), then the bodies [`once`], [`periodic`] and
//! [`idle`]; [`new`] (a task in one call: header, body and pointer, what
//! the pool's facade calls); with feature `tokio`, `async_body` (one run
//! of an async body, on a tokio runtime).

#[cfg(feature = "tokio")]
pub(crate) mod async_body;
pub(crate) mod cadence;
pub(crate) mod calendar;
pub(crate) mod completion;
pub(crate) mod header;
pub(crate) mod idle;
pub(crate) mod kind;
pub(crate) mod new;
pub(crate) mod once;
pub(crate) mod periodic;
pub(crate) mod policy;
pub(crate) mod ptr;
