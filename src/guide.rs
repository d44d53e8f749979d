// The user guide, docs/guide.md, rendered as this module's documentation
// so that it is reachable from the API reference (and on docs.rs). Its
// snippets are fragments (each assumes the names it uses), so this module
// is left out when rustdoc collects doctests (`cfg(not(doctest))` in
// lib.rs). They are compiled instead by integration/tests/guide_snippets.rs,
// generated from the guide with the names each one assumes (an HTML comment
// before its fence, invisible when rendered); integration/tests/guide_sync.rs
// fails when that file is stale. The runnable examples are in the API docs
// and in examples/.
#![doc = include_str!("../docs/guide.md")]
