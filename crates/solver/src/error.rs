//! The solver crate's error type.

use crate::num::ArithError;
use std::fmt;

/// Everything that can go wrong in `dimguard-solver`. Variants name the failing operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A guard or expression could not be parsed.
    #[error("{0}")]
    Parse(#[from] ParseError),
    /// A guard in a message could not be parsed.
    #[error("cannot read the guard for `{dim}` (input line {line}):\n{error}")]
    Guard {
        /// The dimension the guard belongs to.
        dim: String,
        /// 1-based line of the input where the guard's sentence starts.
        line: usize,
        /// The parse error, positioned inside the guard text.
        error: Box<ParseError>,
    },
    /// A pasted text contains no PyTorch dynamic-shape error that dimguard understands.
    #[error("reading the message: {0}")]
    Message(String),
    /// Exact arithmetic failed where no fallback exists.
    #[error("arithmetic: {0}")]
    Arith(#[from] ArithError),
    /// A set operation would need a period larger than the configured limit.
    #[error("set operation needs a period of {needed}, above the limit {limit}")]
    PeriodTooLarge {
        /// The least common multiple the operation needs.
        needed: i128,
        /// The configured limit.
        limit: i128,
    },
}

/// A parse failure, with the position of the offending text.
///
/// `Display` renders the input line with a caret under the offending column:
///
/// ```text
/// error: unsupported function `OpaqueUnaryFn_sqrt`
///   | OpaqueUnaryFn_sqrt(L['x'].size()[2]) > 4
///   | ^^^^^^^^^^^^^^^^^^
///   = help: dimguard understands ...
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What is wrong, naming the construct.
    pub message: String,
    /// The text that was being parsed.
    pub input: String,
    /// Byte offset of the offending text in `input`.
    pub offset: usize,
    /// Byte length of the offending text (at least 1 when rendered).
    pub len: usize,
    /// What to do about it.
    pub help: Option<String>,
}

impl ParseError {
    /// A new error at `offset..offset+len` of `input`.
    pub fn new(message: impl Into<String>, input: &str, offset: usize, len: usize) -> ParseError {
        ParseError {
            message: message.into(),
            input: input.to_string(),
            offset: offset.min(input.len()),
            len,
            help: None,
        }
    }

    /// Adds advice.
    pub fn with_help(mut self, help: impl Into<String>) -> ParseError {
        self.help = Some(help.into());
        self
    }

    /// 1-based line and column (in characters) of the offending text.
    pub fn line_col(&self) -> (usize, usize) {
        let before = &self.input[..floor_char_boundary(&self.input, self.offset)];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line_no, col) = self.line_col();
        let line = self.input.lines().nth(line_no - 1).unwrap_or("");
        // Long lines (a whole guard is often several hundred characters) are shown as a window
        // around the offending column so the caret stays on screen.
        let chars: Vec<char> = line.chars().collect();
        let start = col.saturating_sub(1).saturating_sub(60);
        let end = (start + 120).min(chars.len());
        let shown: String = chars[start.min(chars.len())..end].iter().collect();
        let prefix = if start > 0 { "…" } else { "" };
        let suffix = if end < chars.len() { "…" } else { "" };
        let off_start = floor_char_boundary(&self.input, self.offset);
        let off_end = floor_char_boundary(&self.input, self.offset + self.len.max(1));
        let width = self.input[off_start..off_end.max(off_start)]
            .chars()
            .count()
            .max(1);
        let width = width.min(end.saturating_sub(col - 1).max(1));
        writeln!(f, "{} (line {line_no}, column {col})", self.message)?;
        writeln!(f, "  | {prefix}{shown}{suffix}")?;
        let pad = col - 1 - start + prefix.chars().count();
        write!(f, "  | {}{}", " ".repeat(pad), "^".repeat(width))?;
        if let Some(h) = &self.help {
            write!(f, "\n  = help: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_points_at_column() {
        let e = ParseError::new("unexpected `)`", "a + )", 4, 1);
        let s = e.to_string();
        assert!(s.contains("line 1, column 5"), "{s}");
        assert!(s.ends_with("  | a + )\n  |     ^"), "{s}");
    }

    #[test]
    fn caret_on_second_line_and_unicode() {
        let e = ParseError::new("bad", "x\nµµ ?", 7, 1);
        assert_eq!(e.line_col(), (2, 4));
        assert!(e.to_string().ends_with("  | µµ ?\n  |    ^"), "{e}");
    }

    #[test]
    fn offsets_past_the_end_do_not_panic() {
        let e = ParseError::new("unexpected end", "abc", 99, 5);
        assert!(e.to_string().contains("column 4"));
        let e = ParseError::new("x", "", 0, 0);
        let _ = e.to_string();
    }
}
