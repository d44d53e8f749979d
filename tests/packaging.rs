//! The README's demo builds the library and little else (issue 20, finding
//! 9): the crates a default build of `schedpool` compiles, counted from
//! `cargo tree` on the lock file. The build's time is measured, not
//! asserted (docs/performance-log.md, "The README's demo on a clean clone").

use std::collections::BTreeSet;
use std::process::Command;

/// The bound: at most 21 crates for `cargo run --release --example
/// order_timeouts` from a clean clone.
const MAX_CRATES: usize = 21;

/// `cargo tree` for the root package, with the given edge kinds; the crate
/// names it lists.
fn tree(edges: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "--locked",
            "-p",
            "schedpool",
            "--prefix",
            "none",
        ])
        .args(["-e", edges])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_demo_compiles_few_crates_and_the_root_package_has_no_dev_dependencies() {
    let normal = tree("normal,build");
    assert!(normal.contains("schedpool"), "{normal:?}");
    assert!(
        normal.len() <= MAX_CRATES,
        "a default build compiles {} crates (at most {MAX_CRATES}): {normal:?}",
        normal.len()
    );
    // Dev-dependencies would be compiled for every example, the demo too.
    let dev = tree("dev");
    assert_eq!(
        dev.into_iter().collect::<Vec<_>>(),
        ["schedpool"],
        "the root package gained dev-dependencies (put them in integration/ or benches/)"
    );
}
