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
    /// A range in a message could not be read, or admits no size.
    #[error("cannot read the range of `{dim}` (input line {line}):\n{error}")]
    Range {
        /// The dimension the range belongs to.
        dim: String,
        /// 1-based line of the input where the range's sentence starts.
        line: usize,
        /// What is wrong, positioned inside the range text.
        error: Box<ParseError>,
    },
    /// A dimension of a message whose source (`NAME = SOURCE`) is missing or cannot be read.
    #[error("cannot read which size `{dim}` is (input line {line}):\n{error}")]
    Source {
        /// The dimension's name.
        dim: String,
        /// 1-based line of the input where the sentence starts.
        line: usize,
        /// What is wrong, with a caret where the source should be.
        error: Box<ParseError>,
    },
    /// A `dynamic_shapes` spec (for `verify`) defines a dimension wrongly.
    #[error("spec line {line}: {error}")]
    Spec {
        /// 1-based line of the spec.
        line: usize,
        /// What is wrong, with a caret under it.
        error: Box<ParseError>,
    },
    /// Reading a user's spec as data (`dimguard.export`'s merge, `profile --spec`) failed: the
    /// part not understood, quoted.
    #[error("reading the spec: {0}")]
    Sheet(String),
    /// A pasted text contains no PyTorch dynamic-shape error that dimguard understands.
    #[error("reading the message: {0}")]
    Message(String),
    /// A `--range NAME=LO..HI` argument that does not read (the argument as given).
    #[error("--range expects NAME=LO..HI with integers LO <= HI, got `{0}`")]
    RangeArg(String),
    /// A value range of a structured trace (`"vr": "[96, 1024]"`) that does not read.
    #[error("range `{text}` {problem}")]
    ValueRange {
        /// The range as the trace wrote it.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
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
    /// The budget of the current thread ran out ([`crate::budget`]): the answer is partial.
    #[error("{}", .0.reason())]
    Exhausted(crate::budget::Exhausted),
    /// A set dimguard does not compute (each size's own set in a group where the others define
    /// one size): the text says which.
    #[error("not computed: {0}")]
    NotComputed(String),
}

impl From<crate::budget::Exhausted> for Error {
    fn from(e: crate::budget::Exhausted) -> Error {
        Error::Exhausted(e)
    }
}

/// A parse failure, with the position of the offending text.
///
/// `Display` renders the input line with a caret under the offending column:
///
/// ```text
/// error: unsupported function `OpaqueUnaryFn_log`
///   | OpaqueUnaryFn_log(L['x'].size()[2]) > 4
///   | ^^^^^^^^^^^^^^^^^
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
        let span = self.input[off_start..off_end.max(off_start)]
            .chars()
            .count()
            .max(1);
        let first = (col - 1).min(chars.len()).max(start);
        let last = (first + span).min(end).max(first + 1);
        writeln!(f, "{} (line {line_no}, column {col})", self.message)?;
        writeln!(f, "  | {prefix}{shown}{suffix}")?;
        // The caret line repeats the shown line's tabs and counts wide characters twice, so the
        // caret sits under the offending text in a terminal.
        let pad: String = prefix
            .chars()
            .chain(chars[start.min(first)..first].iter().copied())
            .map(|c| match c {
                '\t' => "\t".to_string(),
                c => " ".repeat(display_width(c)),
            })
            .collect();
        let carets: usize = chars
            .get(first..last.min(chars.len()))
            .map_or(1, |cs| {
                cs.iter().map(|&c| display_width(c).max(1)).sum::<usize>()
            })
            .max(1);
        write!(f, "  | {pad}{}", "^".repeat(carets))?;
        if let Some(h) = &self.help {
            write!(f, "\n  = help: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}

/// Terminal columns of a character: 0 for combining marks and zero-width characters, 2 for East
/// Asian wide and full-width characters and emoji, 1 otherwise (a tab is handled by the caller).
pub fn display_width(c: char) -> usize {
    let u = c as u32;
    match u {
        0x0300..=0x036F | 0x200B..=0x200F | 0x20D0..=0x20FF | 0xFE00..=0xFE0F | 0xFE20..=0xFE2F => {
            0
        }
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F900..=0x1F9FF
        | 0x20000..=0x3FFFD => 2,
        _ => 1,
    }
}

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
    fn carets_line_up_under_tabs_and_wide_characters() {
        // A tab is repeated in the caret line, so the terminal expands both the same way.
        let e = ParseError::new("bad", "\tx + ?", 5, 1);
        assert!(e.to_string().ends_with("  | \tx + ?\n  | \t    ^"), "{e}");
        // CJK and emoji take two columns each; the caret is under `?`, two carets under `名`.
        let e = ParseError::new("bad", "名前 + ?", "名前 + ".len(), 1);
        assert!(
            e.to_string()
                .ends_with(&format!("  | 名前 + ?\n  | {}^", " ".repeat(7))),
            "{e}"
        );
        let e = ParseError::new("bad", "a 名 b", 2, "名".len());
        assert!(e.to_string().ends_with("  | a 名 b\n  |   ^^"), "{e}");
        let e = ParseError::new("bad", "🙂 ?", "🙂 ".len(), 1);
        assert!(e.to_string().ends_with("  | 🙂 ?\n  |    ^"), "{e}");
    }

    #[test]
    fn offsets_past_the_end_do_not_panic() {
        let e = ParseError::new("unexpected end", "abc", 99, 5);
        assert!(e.to_string().contains("column 4"));
        let e = ParseError::new("x", "", 0, 0);
        let _ = e.to_string();
    }
}
