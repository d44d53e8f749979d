//! The base layer: what every other layer may use, and which uses nothing
//! of the crate above it. The facade over the synchronisation primitives
//! (real or loom's), the errors, and the one clock seam.

pub(crate) mod clock;
pub(crate) mod error;
pub(crate) mod sync;
