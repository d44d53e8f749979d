//! [`CalendarError`]: why a built-in calendar rule could not be made.
//!
//! # Invariants
//!
//! - Every constructor of a built-in rule returns one of these for bad
//!   input, never panics; a position, when given, is a byte offset into
//!   the input that starts at a character boundary.

use std::fmt;

/// What was wrong, for [`CalendarError::kind`].
///
/// # Examples
///
/// ```
/// use schedpool::calendar::{CalendarErrorKind, Daily};
///
/// match Daily::at("25:00", "UTC") {
///     Err(e) if e.kind() == CalendarErrorKind::InvalidTime => println!("ask again: {e}"),
///     Err(e) => panic!("unexpected {e}"),
///     Ok(_) => unreachable!(),
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CalendarErrorKind {
    /// A cron expression that does not parse.
    InvalidExpression,
    /// A time-zone name the bundled IANA database does not have.
    UnknownZone,
    /// A rule that parses but never fires (`0 0 30 2 *`: February 30th).
    NeverFires,
    /// A time of day that does not parse or is out of range (`25:00`).
    InvalidTime,
    /// An interval that cannot be aligned to the wall clock.
    InvalidInterval,
}

/// A calendar rule that could not be made: an invalid cron expression (with
/// where in it), an unknown time zone, a rule that never fires, a bad time
/// of day or interval.
///
/// # Examples
///
/// ```
/// use schedpool::calendar::{CalendarErrorKind, Cron};
///
/// let err = Cron::new("0 0 32 * *", "UTC").unwrap_err();
/// assert_eq!(err.kind(), CalendarErrorKind::InvalidExpression);
/// assert_eq!(err.position(), Some(4));
/// assert_eq!(err.field(), Some("day of month"));
/// println!("{err}"); // invalid cron expression "0 0 32 * *": day of month field "32" at column 5: ...
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CalendarError {
    kind: CalendarErrorKind,
    input: String,
    position: Option<usize>,
    field: Option<&'static str>,
    reason: String,
}

impl CalendarError {
    /// What was wrong.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::calendar::{CalendarErrorKind, Cron};
    ///
    /// let err = Cron::new("@daily", "Europe/Atlantis").unwrap_err();
    /// assert_eq!(err.kind(), CalendarErrorKind::UnknownZone);
    /// ```
    pub fn kind(&self) -> CalendarErrorKind {
        self.kind
    }

    /// The input that was refused: the expression, zone name, time of day.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::calendar::Daily;
    ///
    /// assert_eq!(Daily::at("7pm", "UTC").unwrap_err().input(), "7pm");
    /// ```
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Where in [`input`](Self::input) the problem starts, as a byte offset
    /// (the column is one more, for ASCII input), when it is one place.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::calendar::Cron;
    ///
    /// let err = Cron::new("0 25 * * *", "UTC").unwrap_err();
    /// let at = err.position().unwrap();
    /// assert_eq!(&err.input()[at..at + 2], "25", "points at the hour field");
    /// ```
    pub fn position(&self) -> Option<usize> {
        self.position
    }

    /// The cron field the problem is in (`"second"`, `"minute"`, `"hour"`,
    /// `"day of month"`, `"month"`, `"day of week"`), when it is in one.
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::calendar::Cron;
    ///
    /// assert_eq!(Cron::new("0 0 * 13 *", "UTC").unwrap_err().field(), Some("month"));
    /// assert_eq!(Cron::new("@daily", "Nowhere/Land").unwrap_err().field(), None);
    /// ```
    pub fn field(&self) -> Option<&'static str> {
        self.field
    }

    /// Why, in words (also part of the `Display` text).
    ///
    /// # Examples
    ///
    /// ```
    /// use schedpool::calendar::Cron;
    ///
    /// let err = Cron::new("0 0 30 2 *", "UTC").unwrap_err();
    /// assert!(err.to_string().contains(err.reason()));
    /// println!("{}", err.reason()); // no date matches it in 400 years ...
    /// ```
    pub fn reason(&self) -> &str {
        &self.reason
    }

    pub(super) fn expression(
        input: &str,
        position: usize,
        field: Option<&'static str>,
        reason: impl Into<String>,
    ) -> Self {
        CalendarError {
            kind: CalendarErrorKind::InvalidExpression,
            input: input.to_owned(),
            position: Some(position.min(input.len())),
            field,
            reason: reason.into(),
        }
    }

    pub(super) fn unknown_zone(name: &str) -> Self {
        CalendarError {
            kind: CalendarErrorKind::UnknownZone,
            input: name.to_owned(),
            position: None,
            field: None,
            reason: "not a time zone of the bundled IANA database (names look like \"Europe/Berlin\" or \"UTC\")".to_owned(),
        }
    }

    pub(super) fn never_fires(input: &str, reason: impl Into<String>) -> Self {
        CalendarError {
            kind: CalendarErrorKind::NeverFires,
            input: input.to_owned(),
            position: None,
            field: None,
            reason: reason.into(),
        }
    }

    pub(super) fn time(input: &str, position: usize, reason: impl Into<String>) -> Self {
        CalendarError {
            kind: CalendarErrorKind::InvalidTime,
            input: input.to_owned(),
            position: Some(position.min(input.len())),
            field: None,
            reason: reason.into(),
        }
    }

    pub(super) fn interval(input: String, reason: impl Into<String>) -> Self {
        CalendarError {
            kind: CalendarErrorKind::InvalidInterval,
            input,
            position: None,
            field: None,
            reason: reason.into(),
        }
    }

    /// The 1-based column of [`position`](Self::position), in characters.
    fn column(&self) -> Option<usize> {
        let at = self.position?;
        let prefix = self.input.get(..at)?;
        Some(prefix.chars().count() + 1)
    }
}

impl fmt::Display for CalendarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            CalendarErrorKind::InvalidExpression => "invalid cron expression",
            CalendarErrorKind::UnknownZone => "unknown time zone",
            CalendarErrorKind::NeverFires => "the rule never fires",
            CalendarErrorKind::InvalidTime => "invalid time of day",
            CalendarErrorKind::InvalidInterval => "invalid interval",
        };
        write!(f, "{what} {:?}", self.input)?;
        if let Some(field) = self.field {
            write!(f, ": {field} field")?;
            if let Some(token) = self.position.and_then(|at| field_token(&self.input, at)) {
                write!(f, " {token:?}")?;
            }
        }
        if let Some(column) = self.column() {
            write!(
                f,
                "{} column {column}",
                if self.field.is_some() { " at" } else { ": at" }
            )?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// The whitespace-separated word of `input` that contains byte `at`.
fn field_token(input: &str, at: usize) -> Option<&str> {
    let space = |c: char| c.is_ascii_whitespace();
    let start = input.get(..at)?.rfind(space).map_or(0, |i| i + 1);
    let rest = input.get(start..)?;
    let len = rest.find(space).unwrap_or(rest.len());
    Some(&rest[..len]).filter(|t| !t.is_empty())
}

impl fmt::Debug for CalendarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CalendarError")
            .field("kind", &self.kind)
            .field("input", &self.input)
            .field("position", &self.position)
            .field("field", &self.field)
            .field("reason", &self.reason)
            .finish()
    }
}

impl std::error::Error for CalendarError {}
