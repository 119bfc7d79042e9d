//! `--html FILE`: one self-contained page (no server, no network: inline CSS, inline SVG, a few
//! lines of inline script for the copy button) drawn from a report, so it serves `diagnose`,
//! `check` and `dimguard.export` reports alike. The page reads the report's typed structs
//! ([`Page`](crate::html::Page)): the CLI builds it from the reports themselves, the Python package hands it a
//! report's JSON ([`Page::from_json`](crate::html::Page::from_json)), read back into the same types.
//!
//! The page shows, per size, a strip of the values of its range: every accepted value is one
//! mark (`<rect class="acc">`) coloured by its residue class, rejected values are pale (one bar
//! per row under the marks); for each group of linked sizes a 2-D plot of the accepted tuples
//! (one mark per tuple, `class="tup"`) with the largest sound box when the report carries one; the
//! guards grouped by the line of the user's code they come from, with the code (per round for
//! `dimguard.export` reports); and the paste-able spec with a copy button. Sets too large to draw
//! value by value (more than [`MAX_MARKS`](crate::html::MAX_MARKS) values) are drawn as one band per segment and say so.
//! Colours are the Okabe–Ito palette (distinguishable with colour-blindness), text contrast is at
//! least 4.5:1, every plot has a text alternative, and the button is reachable by keyboard.
//!
//! Layout: `model` (the report read), `page` (the frame and the order of the sections), `strip`
//! (one size's strip, the one function that draws a size), `joint` (linked sizes), `sections`
//! (guards, rounds, cover, run-time checks), and `text` (what they all use); this module only
//! re-exports.

mod joint;
mod model;
mod page;
mod sections;
mod strip;
mod text;

pub use model::{DrawnDim, Page, PageCover, PageDim, PageError, PagePiece, Round};
pub use page::{render, render_json};
pub use text::MAX_MARKS;
