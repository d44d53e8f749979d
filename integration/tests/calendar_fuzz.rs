//! The calendar parsers on random input: a cron expression, a time of day,
//! a zone name made of anything never panics, and whatever is accepted
//! answers `next_after` with a later time (or `None`), never a panic.
#![cfg(feature = "calendar")]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use schedpool::calendar::{Cron, Daily, Schedule};

fn check_accepted(rule: &impl Schedule, secs: u64) {
    let t = UNIX_EPOCH + Duration::from_secs(secs);
    if let Some(next) = rule.next_after(t) {
        assert!(next > t, "{rule:?} after {t:?} gave {next:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Any text at all.
    #[test]
    fn any_text_is_an_answer_not_a_panic(text in ".{0,48}", secs in 0u64..4_000_000_000) {
        if let Ok(cron) = Cron::new(&text, "UTC") {
            check_accepted(&cron, secs);
        }
        if let Ok(daily) = Daily::at(&text, "Europe/Berlin") {
            check_accepted(&daily, secs);
        }
        let _ = Cron::new("@daily", &text);
    }

    /// Text made of cron's own alphabet, so that much of it nearly parses.
    #[test]
    fn cron_like_text_is_an_answer_not_a_panic(
        fields in proptest::collection::vec("[0-9*/,#?LW+-]{1,6}|[A-Za-z]{3}|[0-9]{1,3}(-[0-9]{1,3})?(/[0-9]{1,2})?", 0..8),
        secs in 0u64..4_000_000_000,
    ) {
        let text = fields.join(" ");
        match Cron::new(&text, "America/New_York") {
            Ok(cron) => check_accepted(&cron, secs),
            Err(e) => {
                // Its position, when given, is inside the text.
                prop_assert!(e.position().is_none_or(|p| p <= text.len()), "{e:?}");
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }
}

#[test]
fn far_past_and_future_times_are_answered() {
    let cron = Cron::new("*/5 * * * *", "Europe/Berlin").unwrap();
    let past = UNIX_EPOCH - Duration::from_secs(1 << 40); // about 34,800 years back
    let future = SystemTime::now() + Duration::from_secs(1 << 38); // about 8,700 years on
    for t in [UNIX_EPOCH, past, future] {
        if let Some(next) = cron.next_after(t) {
            assert!(next > t);
        }
    }
    assert!(
        cron.next_after(past).is_some(),
        "from before jiff's range: its first fire"
    );
}
