//! Daylight saving and changes of a zone's offset by law: what a fire time
//! in a gap (a wall time that never happens) and in an overlap (one that
//! happens twice) does, under each policy, at real transitions of
//! Europe/Berlin, America/New_York, Australia/Lord_Howe (a 30-minute
//! shift), Pacific/Apia (which skipped 2011-12-30) and Europe/Moscow
//! (permanent +04 in 2011, back to +03 in 2014).
#![cfg(feature = "calendar")]

mod calendar_support;

use std::time::Duration;

use calendar_support::{at, expect, fires};
use schedpool::calendar::{Aligned, Cron, Daily, Gap, Overlap, Schedule};

#[test]
fn berlin_spring_forward_runs_at_the_gaps_end_or_skips() {
    // 2025-03-30: 02:00 CET becomes 03:00 CEST; 02:30 does not exist.
    let nightly = Daily::at("02:30", "Europe/Berlin").unwrap();
    assert_eq!(
        fires(&nightly, "2025-03-29T12:00:00+01:00", 3),
        expect(&[
            "2025-03-30T03:00:00+02:00",
            "2025-03-31T02:30:00+02:00",
            "2025-04-01T02:30:00+02:00"
        ])
    );
    let skip = nightly.on_gap(Gap::Skip);
    assert_eq!(
        fires(&skip, "2025-03-29T12:00:00+01:00", 1),
        expect(&["2025-03-31T02:30:00+02:00"])
    );
}

#[test]
fn berlin_fall_back_runs_first_second_or_both() {
    // 2025-10-26: 03:00 CEST becomes 02:00 CET; 02:30 happens twice.
    let from = "2025-10-25T12:00:00+02:00";
    let first = Daily::at("02:30", "Europe/Berlin").unwrap();
    assert_eq!(
        fires(&first, from, 2),
        expect(&["2025-10-26T02:30:00+02:00", "2025-10-27T02:30:00+01:00"])
    );
    let second = first.clone().on_overlap(Overlap::Second);
    assert_eq!(
        fires(&second, from, 2),
        expect(&["2025-10-26T02:30:00+01:00", "2025-10-27T02:30:00+01:00"])
    );
    let both = first.on_overlap(Overlap::Both);
    assert_eq!(
        fires(&both, from, 3),
        expect(&[
            "2025-10-26T02:30:00+02:00",
            "2025-10-26T02:30:00+01:00",
            "2025-10-27T02:30:00+01:00"
        ])
    );
    // Asked from inside the repeated hour (after the first 02:30), First
    // has nothing more that night, Both still has the second 02:30.
    let inside = "2025-10-26T02:45:00+02:00";
    let first = Daily::at("02:30", "Europe/Berlin").unwrap();
    assert_eq!(
        fires(&first, inside, 1),
        expect(&["2025-10-27T02:30:00+01:00"])
    );
    let both = first.on_overlap(Overlap::Both);
    assert_eq!(
        fires(&both, inside, 1),
        expect(&["2025-10-26T02:30:00+01:00"])
    );
}

#[test]
fn hourly_cron_keeps_its_pace_through_new_york_transitions() {
    // `*` in the hour field: Overlap::Both by default, so every 15 minutes
    // of real time, through the repeated hour of 2025-11-02 (01:00-02:00)
    // and across the skipped one of 2025-03-09 (02:00-03:00).
    let quarter = Cron::new("*/15 * * * *", "America/New_York").unwrap();
    for from in ["2025-11-02T00:50:00-04:00", "2025-03-09T01:20:00-05:00"] {
        let times: Vec<_> = quarter.fires_after(at(from)).take(12).collect();
        for pair in times.windows(2) {
            let gap = pair[1].duration_since(pair[0]).unwrap();
            assert_eq!(gap, Duration::from_secs(900), "after {from}: {times:?}");
        }
    }
    // A fixed hour runs once on the fall-back night (First by default).
    let half_past_one = Cron::new("30 1 * * *", "America/New_York").unwrap();
    assert_eq!(
        fires(&half_past_one, "2025-11-01T12:00:00-04:00", 2),
        expect(&["2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00"])
    );
    let both = half_past_one.on_overlap(Overlap::Both);
    assert_eq!(
        fires(&both, "2025-11-01T12:00:00-04:00", 2),
        expect(&["2025-11-02T01:30:00-04:00", "2025-11-02T01:30:00-05:00"])
    );
    // 02:30 on 2025-03-09 does not exist: 03:00 EDT.
    let two_thirty = Cron::new("30 2 * * *", "America/New_York").unwrap();
    assert_eq!(
        fires(&two_thirty, "2025-03-08T12:00:00-05:00", 2),
        expect(&["2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00"])
    );
}

#[test]
fn lord_howe_shifts_by_thirty_minutes() {
    // 2025-10-05: 02:00 (+10:30) becomes 02:30 (+11:00); 02:15 does not exist.
    let quarter_past_two = Daily::at("02:15", "Australia/Lord_Howe").unwrap();
    assert_eq!(
        fires(&quarter_past_two, "2025-10-04T12:00:00+10:30", 2),
        expect(&["2025-10-05T02:30:00+11:00", "2025-10-06T02:15:00+11:00"])
    );
    // 2025-04-06: 02:00 (+11:00) becomes 01:30 (+10:30); 01:45 happens twice.
    let quarter_to_two = Daily::at("01:45", "Australia/Lord_Howe").unwrap();
    let from = "2025-04-05T12:00:00+11:00";
    assert_eq!(
        fires(&quarter_to_two, from, 2),
        expect(&["2025-04-06T01:45:00+11:00", "2025-04-07T01:45:00+10:30"])
    );
    let both = quarter_to_two.on_overlap(Overlap::Both);
    assert_eq!(
        fires(&both, from, 2),
        expect(&["2025-04-06T01:45:00+11:00", "2025-04-06T01:45:00+10:30"])
    );
    // Half-hour boundaries: the 30-minute gap holds exactly 02:00, which
    // runs at its end, 02:30, itself a boundary: one run, no double.
    let half_hourly = Aligned::every(Duration::from_secs(1800), "Australia/Lord_Howe").unwrap();
    assert_eq!(
        fires(&half_hourly, "2025-10-05T01:00:00+10:30", 3),
        expect(&[
            "2025-10-05T01:30:00+10:30",
            "2025-10-05T02:30:00+11:00",
            "2025-10-05T03:00:00+11:00"
        ])
    );
}

#[test]
fn apia_skipped_a_whole_day() {
    // Samoa crossed the date line: 2011-12-29 23:59:59 (-10:00) was
    // followed by 2011-12-31 00:00:00 (+14:00). 2011-12-30 never happened.
    let nine = Daily::at("09:00", "Pacific/Apia").unwrap();
    let from = "2011-12-29T12:00:00-10:00";
    assert_eq!(
        fires(&nine, from, 2),
        expect(&["2011-12-31T00:00:00+14:00", "2011-12-31T09:00:00+14:00"])
    );
    let skip = nine.on_gap(Gap::Skip);
    assert_eq!(
        fires(&skip, from, 1),
        expect(&["2011-12-31T09:00:00+14:00"])
    );
    // Hourly boundaries: the 24 missing hours run once, at the jump.
    let hourly = Aligned::every(Duration::from_secs(3600), "Pacific/Apia").unwrap();
    assert_eq!(
        fires(&hourly, "2011-12-29T22:30:00-10:00", 3),
        expect(&[
            "2011-12-29T23:00:00-10:00",
            "2011-12-31T00:00:00+14:00",
            "2011-12-31T01:00:00+14:00"
        ])
    );
}

#[test]
fn moscow_changed_its_offset_by_law() {
    // 2011-03-27 02:00 (+03) became 03:00 (+04), and stayed there: no fall
    // back in October 2011.
    let half_past_two = Daily::at("02:30", "Europe/Moscow").unwrap();
    assert_eq!(
        fires(&half_past_two, "2011-03-26T12:00:00+03:00", 2),
        expect(&["2011-03-27T03:00:00+04:00", "2011-03-28T02:30:00+04:00"])
    );
    assert_eq!(
        fires(&half_past_two, "2011-10-29T12:00:00+04:00", 3),
        expect(&[
            "2011-10-30T02:30:00+04:00",
            "2011-10-31T02:30:00+04:00",
            "2011-11-01T02:30:00+04:00"
        ])
    );
    // 2014-10-26 02:00 (+04) became 01:00 (+03): 01:30 happened twice.
    let half_past_one = Daily::at("01:30", "Europe/Moscow").unwrap();
    let from = "2014-10-25T12:00:00+04:00";
    assert_eq!(
        fires(&half_past_one, from, 2),
        expect(&["2014-10-26T01:30:00+04:00", "2014-10-27T01:30:00+03:00"])
    );
    let both = half_past_one.on_overlap(Overlap::Both);
    assert_eq!(
        fires(&both, from, 2),
        expect(&["2014-10-26T01:30:00+04:00", "2014-10-26T01:30:00+03:00"])
    );
}

#[test]
fn every_instant_is_after_the_one_asked_about() {
    // Around every transition above, from every minute of a 4-hour window,
    // the answer is strictly later and no fire of the policy is skipped
    // (a second question from just before the answer gives the answer).
    let rules: Vec<Box<dyn Schedule>> = vec![
        Box::new(Cron::new("*/7 * * * *", "Australia/Lord_Howe").unwrap()),
        Box::new(
            Daily::at("02:30", "Europe/Berlin")
                .unwrap()
                .on_overlap(Overlap::Both),
        ),
        Box::new(Aligned::every(Duration::from_secs(600), "America/New_York").unwrap()),
    ];
    let windows = [
        "2025-04-05T23:00:00+11:00",
        "2025-10-04T23:00:00+10:30",
        "2025-10-26T00:00:00+02:00",
        "2025-03-30T00:00:00+01:00",
        "2025-11-02T00:00:00-04:00",
    ];
    for rule in &rules {
        for window in windows {
            for minute in 0..240 {
                let t = at(window) + Duration::from_secs(minute * 60 + 17);
                let next = rule.next_after(t).unwrap();
                assert!(next > t, "{rule:?} after {t:?}");
                let again = rule.next_after(next - Duration::from_nanos(1)).unwrap();
                assert_eq!(again, next, "{rule:?} after {t:?}");
            }
        }
    }
}
