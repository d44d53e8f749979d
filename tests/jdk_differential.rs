//! Differential test against the real JDK: every scenario in
//! `tests/jdk/scenarios/*.scn` runs on `java.util.concurrent.ScheduledThreadPoolExecutor`
//! (through `tests/jdk/ScenarioRunner.java`, in one `java` process) and, at the
//! same time, in-process on schedpool (`tests/jdk_support`). The two event
//! traces must be identical, line by line.
//!
//! Run it with `cargo test --release --test jdk_differential`.
//! See `docs/jdk-differential.md` and `tests/jdk/README.md`.
//!
//! Environment:
//! - `JAVA_HOME`: the JDK to use (else `javac`/`java` from `PATH`; if they are
//!   missing and we are root, `apt-get install openjdk-17-jdk-headless`);
//! - `JDK_DIFF_FILTER=substr`: run only the scenarios whose file name contains it;
//! - `JDK_DIFF_SKIP=1`: skip the test (prints a notice) where no JDK can be had.

mod jdk_support;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A scenario that takes longer than this on the schedpool side is reported
/// as hung (its thread is abandoned) and the test goes on.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(60);

/// The whole Java run (all scenarios in one process) must end within this.
const JAVA_TIMEOUT: Duration = Duration::from_secs(600);

fn tool(name: &str) -> PathBuf {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let p = Path::new(&home).join("bin").join(name);
        if p.exists() {
            return p;
        }
    }
    PathBuf::from(name)
}

fn works(cmd: &Path) -> bool {
    Command::new(cmd)
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Finds `javac` and `java`, installing Debian's JDK 17 if we can.
fn find_jdk() -> (PathBuf, PathBuf) {
    let (javac, java) = (tool("javac"), tool("java"));
    if works(&javac) && works(&java) {
        return (javac, java);
    }
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    if is_root {
        eprintln!(
            "jdk_differential: no JDK found, installing openjdk-17-jdk-headless with apt-get"
        );
        let install = || {
            Command::new("apt-get")
                .args([
                    "install",
                    "-y",
                    "--no-install-recommends",
                    "openjdk-17-jdk-headless",
                ])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        };
        if !install() {
            let _ = Command::new("apt-get").args(["update"]).status();
            install();
        }
        if works(&javac) && works(&java) {
            return (javac, java);
        }
    }
    panic!(
        "jdk_differential needs a JDK (javac and java, 11 or newer; the reference is 17).\n\
         Install one (Debian/Ubuntu: `apt-get install openjdk-17-jdk-headless`), or point \
         JAVA_HOME at one, or set JDK_DIFF_SKIP=1 to skip this test."
    );
}

fn mtime(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Compiles ScenarioRunner.java into `$CARGO_TARGET_TMPDIR/jdk` unless the
/// class file is newer than the source.
fn compile_runner(javac: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jdk/ScenarioRunner.java");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("jdk");
    let class = out.join("ScenarioRunner.class");
    let fresh = matches!((mtime(&class), mtime(&src)), (Some(c), Some(s)) if c >= s);
    if !fresh {
        std::fs::create_dir_all(&out).expect("creating the javac output directory");
        let o = Command::new(javac)
            .args(["-encoding", "UTF-8", "-d"])
            .arg(&out)
            .arg(&src)
            .output()
            .expect("running javac");
        assert!(
            o.status.success(),
            "javac failed on {}:\n{}{}",
            src.display(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    out
}

/// Splits the Java runner's output into scenario name -> trace lines.
fn parse_java(out: &str) -> BTreeMap<String, Vec<String>> {
    let mut map = BTreeMap::new();
    let mut cur: Option<(String, Vec<String>)> = None;
    for line in out.lines() {
        if line == "=== end" {
            if let Some((name, lines)) = cur.take() {
                map.insert(name, lines);
            }
        } else if let Some(name) = line.strip_prefix("=== ") {
            cur = Some((name.to_string(), Vec::new()));
        } else if let Some((_, lines)) = cur.as_mut() {
            lines.push(line.to_string());
        }
    }
    map
}

/// Runs one scenario on schedpool in its own thread, so that a hang is
/// reported instead of hanging the test.
fn run_rust(name: &str, src: String) -> Vec<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(format!("scenario-{name}"))
        .spawn(move || {
            let r = std::panic::catch_unwind(|| jdk_support::run_scenario(&src));
            let _ = tx.send(r);
        })
        .expect("spawning a scenario thread");
    match rx.recv_timeout(SCENARIO_TIMEOUT) {
        Ok(Ok(lines)) => lines,
        Ok(Err(p)) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            vec![format!("ERROR panic in the schedpool runner: {msg}")]
        }
        Err(_) => vec![format!(
            "ERROR scenario did not finish within {SCENARIO_TIMEOUT:?} (hang?)"
        )],
    }
}

/// Installs a panic hook that keeps the panics scenario tasks raise on
/// purpose off stderr; everything else goes to the previous hook.
fn quiet_scenario_panics() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if !msg.starts_with(jdk_support::PANIC_PREFIX) {
            prev(info);
        }
    }));
}

#[test]
fn jdk_differential() {
    if std::env::var_os("JDK_DIFF_SKIP").is_some_and(|v| v != "0" && !v.is_empty()) {
        eprintln!("jdk_differential: skipped (JDK_DIFF_SKIP is set)");
        return;
    }
    let started = Instant::now();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jdk/scenarios");
    let filter = std::env::var("JDK_DIFF_FILTER").unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("reading tests/jdk/scenarios")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "scn"))
        .collect();
    files.sort();
    if filter.is_empty() {
        assert!(
            files.len() >= 28,
            "expected at least 28 scenarios, found {}",
            files.len()
        );
    }
    files.retain(|p| p.file_name().unwrap().to_string_lossy().contains(&filter));
    assert!(
        !files.is_empty(),
        "no scenario matches JDK_DIFF_FILTER={filter:?}"
    );

    // Scenario sanity: a '~' directive (known difference) needs an expect-diff
    // line, and the entry it names must exist in docs/java-differences.md.
    let differences = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/java-differences.md"),
    )
    .expect("reading docs/java-differences.md");
    let mut sources = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(f).expect("reading a scenario");
        let code = |l: &&str| l.split('#').next().unwrap_or("").trim().to_string();
        let uses_tilde = src.lines().any(|l| code(&l).starts_with('~'));
        let declares = src.lines().any(|l| code(&l).starts_with("expect-diff"));
        assert!(
            !uses_tilde || declares,
            "{name}: a '~' directive needs an `expect-diff <doc-id>` line naming the documented difference"
        );
        for id in src
            .lines()
            .filter_map(|l| code(&l).strip_prefix("expect-diff").map(str::to_owned))
        {
            let id = id.split_whitespace().next().unwrap_or("").to_string();
            assert!(
                differences.contains(&format!("| {id} |")),
                "{name}: `expect-diff {id}` names no entry of docs/java-differences.md"
            );
        }
        sources.push((name, src));
    }

    let (javac, java) = find_jdk();
    let classes = compile_runner(&javac);

    // The JDK side runs in one child process while the schedpool side runs here.
    let mut child = Command::new(&java)
        .args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"])
        .arg(&classes)
        .arg("ScenarioRunner")
        .args(&files)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting java");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let java_out = std::thread::spawn(move || {
        let mut s = String::new();
        stdout
            .read_to_string(&mut s)
            .expect("reading java's output");
        s
    });
    let java_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });

    quiet_scenario_panics();
    let mut rust: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, src) in &sources {
        rust.insert(name.clone(), run_rust(name, src.clone()));
    }
    let rust_done = started.elapsed();

    // The Java runner bounds every wait itself; this is a last resort.
    let java_deadline = started + JAVA_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for java") {
            break status;
        }
        if Instant::now() > java_deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the Java runner did not finish within {JAVA_TIMEOUT:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let java_text = java_out.join().unwrap();
    let java_stderr = java_err.join().unwrap();
    assert!(
        status.success(),
        "the Java runner failed ({status}):\n{java_stderr}"
    );
    let java = parse_java(&java_text);

    let mut failures = Vec::new();
    let mut known = Vec::new();
    for (name, src) in &sources {
        let rs = &rust[name];
        let Some(js) = java.get(name) else {
            failures.push(format!("--- {name}: no trace from the Java runner\n"));
            continue;
        };
        let doc_ids: Vec<&str> = src
            .lines()
            .filter_map(|l| l.split('#').next()?.trim().strip_prefix("expect-diff"))
            .map(str::trim)
            .collect();
        let mut report = String::new();
        for i in 0..js.len().max(rs.len()) {
            let (j, r) = (js.get(i), rs.get(i));
            if j == r {
                continue;
            }
            let j = j.map(String::as_str).unwrap_or("<no line>");
            let r = r.map(String::as_str).unwrap_or("<no line>");
            let is_known = |l: &str| {
                l.split_once(' ')
                    .is_some_and(|(_, rest)| rest.starts_with('~'))
            };
            if is_known(j) && is_known(r) && j.split(' ').next() == r.split(' ').next() {
                known.push(format!(
                    "{name} (expect-diff {}): java `{j}` / schedpool `{r}`",
                    doc_ids.join(", ")
                ));
                continue;
            }
            report.push_str(&format!(
                "  trace line {}:\n    java:      {j}\n    schedpool: {r}\n",
                i + 1
            ));
        }
        if !report.is_empty() {
            let mut full = format!("--- {name} differs:\n{report}");
            if js
                .iter()
                .any(|l| l.contains(" TIMEOUT ") || l.starts_with("ERROR"))
            {
                full.push_str(
                    "  note: the JDK side timed out or failed too: suspect the scenario \
                     (or a badly overloaded machine) before schedpool\n",
                );
            }
            full.push_str("  full traces (java | schedpool):\n");
            for i in 0..js.len().max(rs.len()) {
                let j = js.get(i).map(String::as_str).unwrap_or("");
                let r = rs.get(i).map(String::as_str).unwrap_or("");
                let mark = if j == r { ' ' } else { '!' };
                full.push_str(&format!("   {mark} {j:<52} | {r}\n"));
            }
            failures.push(full);
        }
    }

    eprintln!(
        "jdk_differential: {} scenarios, schedpool side {:.1?}, total {:.1?}",
        sources.len(),
        rust_done,
        started.elapsed()
    );
    for k in &known {
        eprintln!("jdk_differential: known difference: {k}");
    }
    if !java_stderr.trim().is_empty() {
        eprintln!("jdk_differential: java stderr:\n{java_stderr}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios differ between the JDK and schedpool:\n\n{}",
        failures.len(),
        sources.len(),
        failures.join("\n")
    );
}
