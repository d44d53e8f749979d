//! Built-in calendar rules: cron parsing and next fire times against a
//! published table, fixed daily times, aligned intervals, and the errors
//! bad input gets at construction.
#![cfg(feature = "calendar")]

mod calendar_support;

use std::time::Duration;

use calendar_support::{at, expect, fires};
use schedpool::calendar::{Aligned, CalendarErrorKind, Cron, Daily, Gap, Schedule};

/// One row of the table: an expression, a start, and the fire times that
/// follow it, each the `next` of the one before.
struct Row {
    expression: &'static str,
    after: &'static str,
    then: &'static [&'static str],
}

/// Rows of Spring Framework's `CronExpressionTests`
/// (spring-context/src/test/java/org/springframework/scheduling/support/
/// CronExpressionTests.java, "Copyright 2002-2021", at commit
/// 0a7105d23e6187ac79cd00f5df1609d28a6698b6 of spring-projects/
/// spring-framework): each test that starts from a fixed date, with its
/// expression and expected times copied as data. Spring's `LocalDateTime`s
/// are read as UTC. Where a Spring test starts from "today at a date" (its
/// time of day is the clock's), the row uses 12:00, which gives the same
/// expectations. Test names are Spring's.
///
/// Adaptations, of Spring's semantics rather than its data (each row says
/// which):
/// Spring ANDs day-of-month and day-of-week when both are restricted, cron
/// (and this crate) ORs them, so those rows (`fixedDays`, `everyTenDays`,
/// `various`) carry the `+` that asks for AND. Left out: the `L-3` /
/// `L-1` rows (croner has no "n days before the last"; such an expression
/// is refused, see `unsupported_spring_syntax_is_an_error_not_a_guess`).
const SPRING: &[Row] = &[
    // leapYearSpecificDate
    Row {
        expression: "0 0 0 29 2 *",
        after: "2007-02-10T12:00:00",
        then: &["2008-02-29T00:00:00", "2012-02-29T00:00:00"],
    },
    // weekDaySequence
    Row {
        expression: "0 0 7 ? * MON-FRI",
        after: "2009-09-26T12:00:00",
        then: &[
            "2009-09-28T07:00:00",
            "2009-09-29T07:00:00",
            "2009-09-30T07:00:00",
        ],
    },
    // monthSequence
    Row {
        expression: "0 30 23 30 1/3 ?",
        after: "2010-12-30T12:00:00",
        then: &[
            "2011-01-30T23:30:00",
            "2011-04-30T23:30:00",
            "2011-07-30T23:30:00",
        ],
    },
    // fixedDays (Spring asserts the 29th and a Wednesday: 2040-02-29)
    Row {
        expression: "0 0 0 29 2 +WED",
        after: "2012-02-29T01:00:00",
        then: &["2040-02-29T00:00:00"],
    },
    // everyTenDays
    Row {
        expression: "0 15 12 */10 1-8 +5",
        after: "2021-04-30T12:14:59",
        then: &[
            "2021-05-21T12:15:00",
            "2021-06-11T12:15:00",
            "2022-01-21T12:15:00",
        ],
    },
    // quartzLastDayOfMonth
    Row {
        expression: "0 0 0 L * *",
        after: "2008-01-04T12:00:00",
        then: &[
            "2008-01-31T00:00:00",
            "2008-02-29T00:00:00",
            "2008-03-31T00:00:00",
            "2008-04-30T00:00:00",
        ],
    },
    // quartzLastWeekdayOfMonth
    Row {
        expression: "0 0 0 LW * *",
        after: "2008-01-04T12:00:00",
        then: &[
            "2008-01-31T00:00:00",
            "2008-02-29T00:00:00",
            "2008-03-31T00:00:00",
            "2008-04-30T00:00:00",
            "2008-05-30T00:00:00",
            "2008-06-30T00:00:00",
            "2008-07-31T00:00:00",
            "2008-08-29T00:00:00",
            "2008-09-30T00:00:00",
            "2008-10-31T00:00:00",
            "2008-11-28T00:00:00",
            "2008-12-31T00:00:00",
        ],
    },
    // quartzLastDayOfWeekOffset
    Row {
        expression: "0 0 0 * * 5L",
        after: "2008-01-04T12:00:00",
        then: &[
            "2008-01-25T00:00:00",
            "2008-02-29T00:00:00",
            "2008-03-28T00:00:00",
            "2008-04-25T00:00:00",
            "2008-05-30T00:00:00",
            "2008-06-27T00:00:00",
            "2008-07-25T00:00:00",
            "2008-08-29T00:00:00",
            "2008-09-26T00:00:00",
            "2008-10-31T00:00:00",
            "2008-11-28T00:00:00",
            "2008-12-26T00:00:00",
        ],
    },
    // quartzWeekdayNearestTo15
    Row {
        expression: "0 0 0 15W * ?",
        after: "2020-01-01T00:00:00",
        then: &[
            "2020-01-15T00:00:00",
            "2020-02-14T00:00:00",
            "2020-03-16T00:00:00",
            "2020-04-15T00:00:00",
        ],
    },
    // quartzWeekdayNearestTo1
    Row {
        expression: "0 0 0 1W * ?",
        after: "2019-12-31T00:00:00",
        then: &[
            "2020-01-01T00:00:00",
            "2020-02-03T00:00:00",
            "2020-03-02T00:00:00",
            "2020-04-01T00:00:00",
        ],
    },
    Row {
        expression: "0 0 0 1W * ?",
        after: "2022-01-01T00:00:00",
        then: &["2022-01-03T00:00:00"],
    },
    Row {
        expression: "0 0 0 1W * ?",
        after: "2021-08-01T00:00:00",
        then: &["2021-08-02T00:00:00"],
    },
    // quartzWeekdayNearestTo31, with one date more than Spring's: May 31st
    // 2020 is a Sunday, and Quartz's rule (the weekday nearest, never
    // across the month's end) gives Friday the 29th, as croner does;
    // Spring's test skips May.
    Row {
        expression: "0 0 0 31W * ?",
        after: "2020-01-01T00:00:00",
        then: &[
            "2020-01-31T00:00:00",
            "2020-03-31T00:00:00",
            "2020-05-29T00:00:00",
            "2020-07-31T00:00:00",
            "2020-08-31T00:00:00",
            "2020-10-30T00:00:00",
            "2020-12-31T00:00:00",
        ],
    },
    // quartz2ndFridayOfTheMonth, quartz2ndFridayOfTheMonthDayName
    Row {
        expression: "0 0 0 ? * 5#2",
        after: "2020-01-01T00:00:00",
        then: &[
            "2020-01-10T00:00:00",
            "2020-02-14T00:00:00",
            "2020-03-13T00:00:00",
            "2020-04-10T00:00:00",
        ],
    },
    Row {
        expression: "0 0 0 ? * FRI#2",
        after: "2020-01-01T00:00:00",
        then: &[
            "2020-01-10T00:00:00",
            "2020-02-14T00:00:00",
            "2020-03-13T00:00:00",
            "2020-04-10T00:00:00",
        ],
    },
    // quartzFifthWednesdayOfTheMonth
    Row {
        expression: "0 0 0 ? * 3#5",
        after: "2020-01-01T00:00:00",
        then: &[
            "2020-01-29T00:00:00",
            "2020-04-29T00:00:00",
            "2020-07-29T00:00:00",
            "2020-09-30T00:00:00",
            "2020-12-30T00:00:00",
        ],
    },
    // dayOfMonthListWithQuartz
    Row {
        expression: "0 0 0 1W,15,LW * ?",
        after: "2019-12-30T00:00:00",
        then: &[
            "2019-12-31T00:00:00",
            "2020-01-01T00:00:00",
            "2020-01-15T00:00:00",
            "2020-01-31T00:00:00",
        ],
    },
    // dayOfWeekListWithQuartz
    Row {
        expression: "0 0 0 ? * THU#1,THU#3,THU#5",
        after: "2019-12-31T00:00:00",
        then: &[
            "2020-01-02T00:00:00",
            "2020-01-16T00:00:00",
            "2020-01-30T00:00:00",
        ],
    },
    // quartzLastDayOfMonthEveryHour
    Row {
        expression: "0 0 * L * *",
        after: "2021-01-30T00:01:00",
        then: &["2021-01-31T00:00:00"],
    },
    Row {
        expression: "0 0 * L * *",
        after: "2021-01-31T01:00:00",
        then: &["2021-01-31T02:00:00"],
    },
    // quartzFirstWeekdayOfMonthEveryHour
    Row {
        expression: "0 0 * 1W * *",
        after: "2021-01-31T00:01:00",
        then: &["2021-02-01T00:00:00"],
    },
    Row {
        expression: "0 0 * 1W * *",
        after: "2021-02-01T01:00:00",
        then: &["2021-02-01T02:00:00"],
    },
    // quartzLastWeekdayOfMonthEveryHour
    Row {
        expression: "0 0 * LW * *",
        after: "2021-01-28T00:01:00",
        then: &["2021-01-29T00:00:00"],
    },
    Row {
        expression: "0 0 * LW * *",
        after: "2021-01-29T01:00:00",
        then: &["2021-01-29T02:00:00"],
    },
    // quartz5thFridayOfTheMonthEveryHour
    Row {
        expression: "0 0 * ? * FRI#5",
        after: "2021-01-28T00:01:00",
        then: &["2021-01-29T00:00:00"],
    },
    Row {
        expression: "0 0 * ? * FRI#5",
        after: "2021-01-29T01:00:00",
        then: &["2021-01-29T02:00:00"],
    },
    // quartzLastFridayOfTheMonthEveryHour
    Row {
        expression: "0 0 * ? * FRIL",
        after: "2021-01-28T00:01:00",
        then: &["2021-01-29T00:00:00"],
    },
    Row {
        expression: "0 0 * ? * FRIL",
        after: "2021-01-29T01:00:00",
        then: &["2021-01-29T02:00:00"],
    },
    // sundayToFriday
    Row {
        expression: "0 0 0 ? * SUN-FRI",
        after: "2021-02-25T15:00:00",
        then: &["2021-02-26T00:00:00", "2021-02-28T00:00:00"],
    },
    // various
    Row {
        expression: "3-57 13-28 17,18 1,15 3-12 +6#1",
        after: "2022-09-15T17:44:11",
        then: &["2022-10-01T17:13:03"],
    },
    Row {
        expression: "*/28 56 22 */6 * *",
        after: "2022-02-27T08:00:42",
        then: &["2022-03-01T22:56:00"],
    },
];

#[test]
fn spring_cron_expression_tests_table() {
    for row in SPRING {
        let cron = Cron::new(row.expression, "UTC").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            fires(&cron, row.after, row.then.len()),
            expect(row.then),
            "{} after {}",
            row.expression,
            row.after
        );
    }
}

/// Spring's `daylightSaving` test (same file), in Europe/Amsterdam. Its
/// third case expects 02:10 on the spring-forward night to be skipped:
/// that is [`Gap::Skip`] here (the default runs it at 03:00 instead).
#[test]
fn spring_daylight_saving_rows() {
    let nine = Cron::new("0 0 9 * * *", "Europe/Amsterdam").unwrap();
    assert_eq!(
        fires(&nine, "2021-03-27T09:00:00+01:00", 1),
        expect(&["2021-03-28T09:00:00+02:00"])
    );
    assert_eq!(
        fires(&nine, "2021-10-30T09:00:00+02:00", 1),
        expect(&["2021-10-31T09:00:00+01:00"])
    );
    let ten_past_two = Cron::new("0 10 2 * * *", "Europe/Amsterdam").unwrap();
    let skip = ten_past_two.clone().on_gap(Gap::Skip);
    assert_eq!(
        fires(&skip, "2013-03-31T01:09:00+01:00", 1),
        expect(&["2013-04-01T02:10:00+02:00"])
    );
    assert_eq!(
        fires(&ten_past_two, "2013-03-31T01:09:00+01:00", 2),
        expect(&["2013-03-31T03:00:00+02:00", "2013-04-01T02:10:00+02:00"])
    );
    let five_past_midnight = Cron::new("0 5 0 * * *", "Europe/Amsterdam").unwrap();
    assert_eq!(
        fires(&five_past_midnight, "2021-03-28T01:00:00+01:00", 1),
        expect(&["2021-03-29T00:05:00+02:00"])
    );
}

#[test]
fn five_fields_names_and_aliases() {
    // 5 fields are minute-first; 6 put a second field in front.
    let five = Cron::new("30 2 * * *", "UTC").unwrap();
    let six = Cron::new("0 30 2 * * *", "UTC").unwrap();
    assert_eq!(
        fires(&five, "2024-01-01T00:00:00", 3),
        fires(&six, "2024-01-01T00:00:00", 3)
    );
    let names = Cron::new("0 9 * jan,Mar mon-FRI", "UTC").unwrap();
    let numbers = Cron::new("0 9 * 1,3 1-5", "UTC").unwrap();
    assert_eq!(
        fires(&names, "2024-01-01T00:00:00", 40),
        fires(&numbers, "2024-01-01T00:00:00", 40)
    );
    // Sunday is 0 and 7.
    let seven = Cron::new("0 0 * * 7", "UTC").unwrap();
    assert_eq!(
        fires(&seven, "2024-01-01T00:00:00", 1),
        expect(&["2024-01-07T00:00:00"])
    );
    for (alias, same) in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ] {
        let a = Cron::new(alias, "UTC").unwrap();
        let b = Cron::new(same, "UTC").unwrap();
        assert_eq!(
            fires(&a, "2024-02-03T04:05:06", 5),
            fires(&b, "2024-02-03T04:05:06", 5),
            "{alias}"
        );
    }
    // Vixie cron ORs two restricted day fields: the 13th, and Fridays.
    let or = Cron::new("0 0 13 * FRI", "UTC").unwrap();
    assert_eq!(
        fires(&or, "2024-09-01T00:00:00", 3),
        expect(&[
            "2024-09-06T00:00:00",
            "2024-09-13T00:00:00",
            "2024-09-20T00:00:00"
        ])
    );
    // `+` asks for both: Friday the 13th.
    let and = Cron::new("0 0 13 * +FRI", "UTC").unwrap();
    assert_eq!(
        fires(&and, "2024-09-01T00:00:00", 2),
        expect(&["2024-09-13T00:00:00", "2024-12-13T00:00:00"])
    );
}

#[test]
fn next_after_is_strictly_after_and_reads_sub_seconds() {
    let every_second = Cron::new("* * * * * *", "UTC").unwrap();
    let t = at("2024-05-05T10:00:00");
    assert_eq!(every_second.next_after(t), Some(t + Duration::from_secs(1)));
    let half = t + Duration::from_millis(500);
    assert_eq!(
        every_second.next_after(half),
        Some(t + Duration::from_secs(1))
    );
}

#[test]
fn daily_and_aligned_rules() {
    let daily = Daily::at("02:30", "UTC").unwrap();
    assert_eq!(
        fires(&daily, "2024-01-01T02:30:00", 2),
        expect(&["2024-01-02T02:30:00", "2024-01-03T02:30:00"])
    );
    let with_seconds = Daily::at("23:59:59", "Asia/Tokyo").unwrap();
    assert_eq!(
        fires(&with_seconds, "2024-01-01T00:00:00Z", 1),
        expect(&["2024-01-01T23:59:59+09:00"])
    );
    let five = Aligned::every(Duration::from_secs(300), "UTC").unwrap();
    assert_eq!(
        fires(&five, "2024-01-01T23:52:01", 3),
        expect(&[
            "2024-01-01T23:55:00",
            "2024-01-02T00:00:00",
            "2024-01-02T00:05:00"
        ])
    );
    // Boundaries are the zone's wall clock: Nepal is UTC+05:45.
    let hourly = Aligned::every(Duration::from_secs(3600), "Asia/Kathmandu").unwrap();
    assert_eq!(
        fires(&hourly, "2024-01-01T00:00:00Z", 1),
        expect(&["2024-01-01T06:00:00+05:45"])
    );
    let quarter_past =
        Aligned::new(Duration::from_secs(3600), Duration::from_secs(900), "UTC").unwrap();
    assert_eq!(
        fires(&quarter_past, "2024-01-01T10:15:00", 2),
        expect(&["2024-01-01T11:15:00", "2024-01-01T12:15:00"])
    );
}

#[test]
fn invalid_expressions_say_where() {
    // (expression, byte position, field)
    let cases: &[(&str, usize, Option<&str>)] = &[
        ("0 0 32 * *", 4, Some("day of month")),
        ("61 * * * *", 0, Some("minute")),
        ("0 0 * * MON-FUN", 12, Some("day of week")),
        ("0 0 * FOO *", 6, Some("month")),
        ("0 25 * * *", 2, Some("hour")),
        ("*/0 * * * *", 2, Some("minute")),
        ("0 0 * * 1#6", 10, Some("day of week")),
        ("0 0 * * * * *", 12, None),
        ("0 0 *", 5, None),
        ("", 0, None),
        ("@sometimes", 0, None),
        ("0 0 ? * ?x", 9, Some("day of week")),
        ("0 0 1 1 MON%", 11, Some("day of week")),
        ("0 0 1 1 ✓", 8, Some("day of week")),
        ("0 0 W * *", 4, Some("day of month")),
        ("0 0 1 * +", 8, Some("day of week")),
    ];
    for &(expression, position, field) in cases {
        match Cron::new(expression, "UTC") {
            Ok(c) => panic!("{expression:?} was accepted: {c:?}"),
            Err(e) => {
                assert_eq!(
                    e.kind(),
                    CalendarErrorKind::InvalidExpression,
                    "{expression:?}: {e}"
                );
                assert_eq!(e.position(), Some(position), "{expression:?}: {e}");
                assert_eq!(e.field(), field, "{expression:?}: {e}");
                assert!(e.to_string().contains("column"), "{e}");
            }
        }
    }
    let e = Cron::new("0 0 32 * *", "UTC").unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid cron expression \"0 0 32 * *\": day of month field \"32\" at column 5: 32 is out of range: this field takes 1-31"
    );
}

#[test]
fn unsupported_spring_syntax_is_an_error_not_a_guess() {
    let e = Cron::new("0 0 0 L-3 * *", "UTC").unwrap_err();
    assert_eq!(e.kind(), CalendarErrorKind::InvalidExpression);
    assert_eq!(e.field(), Some("day of month"));
    assert_eq!(e.position(), Some(6));
}

#[test]
fn rules_that_never_fire_and_unknown_zones_are_refused() {
    for never in [
        "0 0 30 2 *",
        "0 0 0 31 6 *",
        "0 0 31 4,6,9,11 *",
        "0 0 1 * +SUN#5",
    ] {
        let e = Cron::new(never, "UTC").unwrap_err();
        assert_eq!(e.kind(), CalendarErrorKind::NeverFires, "{never}: {e}");
    }
    // Rare is not never: February 29th on a Monday (next in 2044).
    let rare = Cron::new("0 0 29 2 +MON", "UTC").unwrap();
    assert_eq!(
        fires(&rare, "2024-03-01T00:00:00", 1),
        expect(&["2044-02-29T00:00:00"])
    );
    for zone in ["Europe/Berlim", "", "UTC+1", "../../etc/passwd"] {
        let e = Cron::new("@daily", zone).unwrap_err();
        assert_eq!(e.kind(), CalendarErrorKind::UnknownZone, "{zone:?}");
        assert_eq!(e.input(), zone);
    }
    assert_eq!(
        Daily::at("03:00", "Nowhere").unwrap_err().kind(),
        CalendarErrorKind::UnknownZone
    );
}

#[test]
fn bad_times_and_intervals_are_refused() {
    for (time, position) in [
        ("24:00", 0),
        ("12:60", 3),
        ("7pm", 0),
        ("12:00:61", 6),
        ("1:2:3:4", 0),
        ("", 0),
        ("-1:00", 0),
    ] {
        let e = Daily::at(time, "UTC").unwrap_err();
        assert_eq!(e.kind(), CalendarErrorKind::InvalidTime, "{time:?}: {e}");
        assert_eq!(e.position(), Some(position), "{time:?}: {e}");
    }
    assert!(Daily::at("7:05", "UTC").is_ok(), "one-digit hours are fine");
    for (interval, offset) in [(0, 0), (7 * 60, 0), (86_401, 0), (300, 300), (300, 301)] {
        let e = Aligned::new(
            Duration::from_secs(interval),
            Duration::from_secs(offset),
            "UTC",
        )
        .unwrap_err();
        assert_eq!(
            e.kind(),
            CalendarErrorKind::InvalidInterval,
            "{interval} {offset}: {e}"
        );
    }
    assert!(Aligned::every(Duration::from_millis(1500), "UTC").is_err());
    assert!(Aligned::every(Duration::from_secs(86_400), "UTC").is_ok());
}

#[test]
fn far_times_end_cleanly() {
    let daily = Cron::new("@daily", "UTC").unwrap();
    let end = at("9999-12-31T00:00:01");
    assert_eq!(
        daily.next_after(end),
        None,
        "past jiff's last day: no fire, no panic"
    );
    let early = std::time::UNIX_EPOCH - Duration::from_secs(400 * 365 * 86_400);
    assert_eq!(
        daily.next_after(early).map(calendar_support::utc),
        Some("1570-04-09T00:00:00Z".to_owned())
    );
    // Before the year -9999 (jiff's first): the first fire the rule has
    // from there (documented in `schedpool::calendar`).
    let before = std::time::UNIX_EPOCH - Duration::from_secs(13_000 * 365 * 86_400);
    assert_eq!(
        daily.next_after(before).map(calendar_support::utc),
        Some("-9999-01-03T00:00:00Z".to_owned())
    );
}

#[test]
fn instants_before_1970_get_their_own_fire_times() {
    use calendar_support::utc;
    let next = |rule: &dyn Schedule, after: &str| rule.next_after(at(after)).map(utc);
    let some = |t: &str| Some(t.to_owned());
    // A fire before 1970, and one across the epoch.
    let daily = Cron::new("@daily", "UTC").unwrap();
    assert_eq!(
        next(&daily, "1969-07-20T20:17:40"),
        some("1969-07-21T00:00:00Z")
    );
    assert_eq!(
        next(&daily, "1969-12-31T12:00:00"),
        some("1970-01-01T00:00:00Z")
    );
    let quarter = Cron::new("*/15 * * * * *", "UTC").unwrap();
    assert_eq!(
        next(&quarter, "1969-12-31T23:59:40"),
        some("1969-12-31T23:59:45Z")
    );
    assert_eq!(
        next(&quarter, "1969-12-31T23:59:50"),
        some("1970-01-01T00:00:00Z")
    );
    let sub_second = std::time::UNIX_EPOCH - Duration::from_millis(100_500);
    assert_eq!(
        quarter.next_after(sub_second).map(utc),
        some("1969-12-31T23:58:30Z")
    );
    // The zone's rules of the time: New York's summer time of 1965, Berlin
    // without one in 1961, London's year-round +01:00 of 1968-1971.
    let noon = Cron::new("0 12 * * *", "America/New_York").unwrap();
    assert_eq!(
        next(&noon, "1965-07-01T00:00:00"),
        some("1965-07-01T16:00:00Z")
    );
    assert_eq!(
        next(&noon, "1965-12-01T00:00:00"),
        some("1965-12-01T17:00:00Z")
    );
    let berlin = Cron::new("30 2 * * MON", "Europe/Berlin").unwrap();
    assert_eq!(
        next(&berlin, "1961-08-13T00:00:00"),
        some("1961-08-14T01:30:00Z")
    );
    let london = Daily::at("09:00", "Europe/London").unwrap();
    assert_eq!(
        next(&london, "1969-01-15T00:00:00"),
        some("1969-01-15T08:00:00Z")
    );
    let hourly = Aligned::every(Duration::from_secs(3600), "UTC").unwrap();
    assert_eq!(
        next(&hourly, "1960-06-01T00:10:00"),
        some("1960-06-01T01:00:00Z")
    );
}
