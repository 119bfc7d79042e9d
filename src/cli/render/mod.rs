//! Human-readable output of `dimguard diagnose`, `check`, `verify` and a dispatch archive:
//! aligned, colored on a terminal, ending with the code to paste. One private module per report
//! (`diagnose`, `check`, `verify`, `dispatch`), each drawing a size in one function (`dim`); what
//! they share (`style`: the row, a tied size's row, numbers and sets in words; `joint`: joint
//! sets; `fates`: what became of each guard) sits in leaf modules they import, so this one only
//! re-exports.

mod check;
mod diagnose;
mod dispatch;
mod fates;
mod joint;
mod style;
mod verify;

pub use check::check;
pub use diagnose::{covered, Covered};
pub use dispatch::{dispatch, onnx, verdict};
pub use verify::verify;
