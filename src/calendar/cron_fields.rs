//! A cron expression's words, checked one by one before croner parses them,
//! so that an error names its field and column; and the `@` aliases.
//!
//! # Invariants
//!
//! - What passes [`split`] has 6 words (seconds first: `0` is put in front
//!   of a 5-field expression), each made only of the characters, names and
//!   numbers its field takes, with every number in range. croner then
//!   parses exactly that text.
//! - Nothing here panics on any input: every index is a byte offset found
//!   by scanning, and input longer than [`MAX_LEN`] is refused first.

use super::error::CalendarError;

/// The longest expression accepted, in bytes.
pub(super) const MAX_LEN: usize = 1024;

/// A field of a 6-field expression: its name and value range.
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
}

const FIELDS: [Field; 6] = [
    Field {
        name: "second",
        min: 0,
        max: 59,
    },
    Field {
        name: "minute",
        min: 0,
        max: 59,
    },
    Field {
        name: "hour",
        min: 0,
        max: 23,
    },
    Field {
        name: "day of month",
        min: 1,
        max: 31,
    },
    Field {
        name: "month",
        min: 1,
        max: 12,
    },
    Field {
        name: "day of week",
        min: 0,
        max: 7,
    },
];

const DOM: usize = 3;
const MONTH: usize = 4;
const DOW: usize = 5;

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// The aliases and what they stand for (6 fields).
const ALIASES: [(&str, &str); 7] = [
    ("@yearly", "0 0 0 1 1 *"),
    ("@annually", "0 0 0 1 1 *"),
    ("@monthly", "0 0 0 1 * *"),
    ("@weekly", "0 0 0 * * SUN"),
    ("@daily", "0 0 0 * * *"),
    ("@midnight", "0 0 0 * * *"),
    ("@hourly", "0 0 * * * *"),
];

/// A word of the expression: where it starts in the input, and its text.
#[derive(Debug, Clone, Copy)]
pub(super) struct Word<'a> {
    pub(super) at: usize,
    pub(super) text: &'a str,
    /// Its field (an index into the 6 fields).
    pub(super) field: usize,
}

impl Word<'_> {
    pub(super) fn field_name(&self) -> &'static str {
        FIELDS[self.field].name
    }
}

/// The expression's 6 words (seconds first), checked; an alias is
/// expanded (its words then all point at the alias, at 0).
pub(super) fn split(input: &str) -> Result<Vec<Word<'_>>, CalendarError> {
    if input.len() > MAX_LEN {
        return Err(CalendarError::expression(
            input,
            MAX_LEN,
            None,
            format!("longer than {MAX_LEN} bytes"),
        ));
    }
    let mut words = words(input);
    if let Some(first) = words.first().filter(|w| w.1.starts_with('@')) {
        let (at, alias) = *first;
        if words.len() > 1 {
            return Err(CalendarError::expression(
                input,
                words[1].0,
                None,
                "an @ alias stands alone",
            ));
        }
        let Some((_, expansion)) = ALIASES.iter().find(|(a, _)| a.eq_ignore_ascii_case(alias))
        else {
            let known: Vec<&str> = ALIASES.iter().map(|(a, _)| *a).collect();
            return Err(CalendarError::expression(
                input,
                at,
                None,
                format!("unknown alias; the aliases are {}", known.join(", ")),
            ));
        };
        let fields = expansion.split(' ').enumerate();
        return Ok(fields
            .map(|(field, text)| Word { at, text, field })
            .collect());
    }
    let skip = match words.len() {
        5 => 1,
        6 => 0,
        n => {
            let at = words.get(6).map_or(input.len(), |w| w.0);
            return Err(CalendarError::expression(
                input,
                at,
                None,
                format!(
                    "expected 5 fields (minute hour day-of-month month day-of-week) \
                     or 6 (a second field first), found {n}"
                ),
            ));
        }
    };
    let mut out = Vec::with_capacity(6);
    if skip == 1 {
        out.push(Word {
            at: 0,
            text: "0",
            field: 0,
        });
    }
    for (i, (at, text)) in words.drain(..).enumerate() {
        let word = Word {
            at,
            text,
            field: i + skip,
        };
        check(input, &word)?;
        out.push(word);
    }
    Ok(out)
}

/// The ASCII-whitespace-separated words of `input`, with their offsets.
fn words(input: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, b) in input.bytes().enumerate() {
        match (b.is_ascii_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, &input[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &input[s..]));
    }
    out
}

/// Checks a word's characters, names and numbers against its field.
fn check(input: &str, word: &Word<'_>) -> Result<(), CalendarError> {
    let field = &FIELDS[word.field];
    let err = |offset: usize, reason: String| {
        Err(CalendarError::expression(
            input,
            word.at + offset,
            Some(field.name),
            reason,
        ))
    };
    let text = word.text;
    if text == "+" {
        return err(
            0,
            "`+` (both day fields must match) needs a day of week after it".into(),
        );
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let run_end = |pred: fn(u8) -> bool| {
            i + bytes[i..]
                .iter()
                .position(|&c| !pred(c))
                .unwrap_or(bytes.len() - i)
        };
        if b.is_ascii_digit() {
            let end = run_end(|c| c.is_ascii_digit());
            let digits = &text[i..end];
            let value: u32 = digits.parse().unwrap_or(u32::MAX);
            let before = i.checked_sub(1).map(|p| bytes[p]);
            let (min, max, what) = match before {
                Some(b'#') => (1, 5, "the nth weekday (after #)"),
                Some(b'/') => (1, field.max.max(1), "a step"),
                _ => (field.min, field.max, "this field"),
            };
            if value < min || value > max {
                return err(
                    i,
                    format!("{digits} is out of range: {what} takes {min}-{max}"),
                );
            }
            i = end;
        } else if b.is_ascii_alphabetic() {
            let end = run_end(|c| c.is_ascii_alphabetic());
            let name = text[i..end].to_ascii_uppercase();
            if !name_allowed(word.field, &name) {
                return err(i, name_error(word.field, &text[i..end]));
            }
            i = end;
        } else {
            let allowed = match b {
                b'*' | b',' | b'-' | b'/' => true,
                b'?' => word.field == DOM || word.field == DOW,
                b'#' => word.field == DOW,
                b'+' => word.field == DOW && i == 0,
                _ => false,
            };
            if !allowed {
                let c = text[i..].chars().next().unwrap_or('?');
                return err(i, format!("{c:?} is not allowed here"));
            }
            i += text[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    Ok(())
}

fn name_allowed(field: usize, name: &str) -> bool {
    match field {
        MONTH => MONTHS.contains(&name),
        DOW => {
            let day = name.strip_suffix('L').filter(|d| DAYS.contains(d));
            name == "L" || DAYS.contains(&name) || day.is_some()
        }
        DOM => matches!(name, "L" | "W" | "LW"),
        _ => false,
    }
}

fn name_error(field: usize, name: &str) -> String {
    match field {
        MONTH => format!("unknown month {name:?}: months are JAN-DEC or 1-12"),
        DOW => format!("unknown day {name:?}: days are SUN-SAT or 0-7, with L or #n"),
        DOM => format!("{name:?}: the day of month takes numbers, L, W and LW"),
        _ => format!("{name:?}: this field takes numbers only"),
    }
}
