//! The console in a real browser: headless Chromium driven over WebDriver
//! (chromedriver, fantoccini) against a SQLite store this test fills. It reads
//! the counts, is refused a requeue without the token, logs in, requeues
//! a dead letter by clicking and sees it pending again, and sees the
//! `<script>` id and payload shown as text, never run.
//!
//! With `SCHEDPOOL_SCREENSHOTS=DIR` it saves the pages as PNG files in DIR
//! (how docs/img/ was made).

mod support;

use std::path::PathBuf;
use std::time::Duration;

use fantoccini::{Client, Locator};
use schedpool_cli::console::ConsoleConfig;
use schedpool_cli::{OpenOptions, State, Store};

use support::browser::Driver;
use support::http::Served;
use support::{sqlite_store, TempDir, QUEUE, SCRIPT_ID, SCRIPT_PAYLOAD};

const TOKEN: &str = "browser-test-token-0123456789";

/// The element `css` names (waiting up to 10 s for a page being loaded),
/// or a failure that shows the page it is missing from.
async fn find(c: &Client, css: &str) -> fantoccini::elements::Element {
    match c
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(css))
        .await
    {
        Ok(e) => e,
        Err(e) => {
            let url = c.current_url().await.map(|u| u.to_string());
            let page = c.source().await.unwrap_or_default();
            panic!("no {css} on {url:?}: {e}\n{page}")
        }
    }
}

/// The text of the element `css` names. A page still loading can replace
/// the element between the find and the read (a stale reference, seen
/// under load): then it is found again, for up to 10 s.
async fn text(c: &Client, css: &str) -> String {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match find(c, css).await.text().await {
            Ok(text) => return text,
            Err(fantoccini::error::CmdError::Standard(e))
                if e.error == fantoccini::error::ErrorStatus::StaleElementReference
                    && std::time::Instant::now() < until =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the text of {css}: {e}"),
        }
    }
}

/// Clicks the element `css` names, a link or a form's button, and waits
/// (up to 10 s) until the browser has left the page: the click returns
/// before the next page is loaded, and under load a read made at once saw
/// the old page's `#who` ("read-only") after the login button (CI,
/// 2026-12-05). The old page's root turning stale (or unknown, as some
/// chromedriver versions say it) is the sign.
async fn click(c: &Client, css: &str) {
    let old_root = find(c, "html").await;
    find(c, css).await.click().await.expect("click");
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match old_root.tag_name().await {
            Err(fantoccini::error::CmdError::Standard(e))
                if matches!(
                    e.error,
                    fantoccini::error::ErrorStatus::StaleElementReference
                        | fantoccini::error::ErrorStatus::NoSuchElement
                ) =>
            {
                return;
            }
            Ok(_) | Err(_) if std::time::Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => panic!("clicking {css} left the page open after 10 s: {other:?}"),
        }
    }
}

async fn shot(c: &Client, name: &str) {
    let Ok(dir) = std::env::var("SCHEDPOOL_SCREENSHOTS") else {
        return;
    };
    let png = c.screenshot().await.expect("a screenshot");
    let path = PathBuf::from(dir).join(format!("{name}.png"));
    std::fs::write(&path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Requeues charge-1 from the dead-letter page: its row's button, then Confirm.
async fn requeue_charge_1(c: &Client, base: &str) {
    c.goto(&format!("{base}/dead")).await.unwrap();
    click(
        c,
        r#"tr[data-id="charge-1"] button[value="requeue charge-1"]"#,
    )
    .await;
    assert!(text(c, "#confirm-what").await.contains("charge-1"));
    click(c, "#confirm").await;
}

#[test]
fn the_console_in_headless_chromium() {
    let dir = TempDir::new("browser-store");
    let url = sqlite_store(&dir);
    let store = Store::open(&url, &OpenOptions::new(QUEUE)).expect("open the store");
    let served = Served::start(
        store.clone(),
        ConsoleConfig::new(TOKEN).sample_every(Duration::from_millis(200)),
    );
    let base = served.url("");
    let logs = TempDir::new("browser-logs");
    let profile = TempDir::new("browser-profile");
    let driver = Driver::start(logs.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = driver.session(&profile).await;
        c.set_window_size(1280, 900).await.unwrap();

        // The overview's counts, as the browser renders them.
        c.goto(&format!("{base}/")).await.unwrap();
        assert_eq!(text(&c, "#count-pending").await, "7");
        assert_eq!(text(&c, "#count-in-flight").await, "0");
        assert_eq!(text(&c, "#count-dead").await, "3");
        assert!(
            c.find(Locator::Css("#chart-counts svg")).await.is_ok(),
            "the counts chart"
        );

        // A change without the token is refused, and nothing changes.
        requeue_charge_1(&c, &base).await;
        let refusal = text(&c, "#refusal").await;
        assert!(
            refusal.contains("changes need the console's token"),
            "{refusal}"
        );
        assert_eq!(store.item("charge-1").unwrap().item.state, State::Dead);

        // Log in with the token, then the same clicks requeue it.
        c.goto(&format!("{base}/login")).await.unwrap();
        c.find(Locator::Css("#token"))
            .await
            .unwrap()
            .send_keys(TOKEN)
            .await
            .unwrap();
        let name = c.find(Locator::Css("#name")).await.unwrap();
        name.clear().await.unwrap();
        name.send_keys("browser").await.unwrap();
        click(&c, "#login").await;
        assert!(text(&c, "#who").await.contains("token given"));
        requeue_charge_1(&c, &base).await;
        assert_eq!(text(&c, "#result").await, "Requeued 1 dead letter.");
        click(&c, "#item-link").await;
        assert_eq!(text(&c, "#item-state").await, "pending");
        assert_eq!(store.item("charge-1").unwrap().item.state, State::Pending);
        assert_eq!(store.audit(1).unwrap()[0].by, "browser");
        c.goto(&format!("{base}/")).await.unwrap();
        assert_eq!(text(&c, "#count-pending").await, "8");
        assert_eq!(text(&c, "#count-dead").await, "2");

        // The <script> id and payload are shown as text, and nothing ran.
        c.goto(&format!("{base}/items?state=pending&kind=mail"))
            .await
            .unwrap();
        click(&c, "#items td.id a").await;
        assert_eq!(text(&c, "#item-id").await, SCRIPT_ID);
        let payload = text(&c, "#payload").await;
        assert!(
            payload.contains("<script>alert('payload')</script>"),
            "{payload}"
        );
        assert!(SCRIPT_PAYLOAD.contains("alert('payload')"));
        let scripts = c.find_all(Locator::Css("script")).await.unwrap();
        assert!(scripts.is_empty(), "a <script> element reached the DOM");
        assert!(
            c.get_alert_text().await.is_err(),
            "an alert is open: a script ran"
        );
        shot(&c, "console-item").await;

        // The pages for the docs (with a few samples in the charts).
        tokio::time::sleep(Duration::from_millis(1500)).await;
        c.set_window_size(1280, 1250).await.unwrap();
        c.goto(&format!("{base}/")).await.unwrap();
        shot(&c, "console-overview").await;
        c.goto(&format!("{base}/dead")).await.unwrap();
        shot(&c, "console-dead").await;
        c.close().await.unwrap();
    });
}
