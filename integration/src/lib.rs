//! This package holds schedpool's tests and examples that need
//! heavy dependencies (tokio, proptest, exporters), so that the library's own build (and the README's
//! demo) compiles none of them. Its one module, `prometheus` (feature
//! `metrics`), is the Prometheus endpoint that the example
//! `metrics_prometheus` serves and `tests/metrics.rs` scrapes.

#[cfg(feature = "metrics")]
pub mod prometheus;
