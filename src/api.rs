//! The pipelines behind the commands, for the binary and the Python package alike: read, solve,
//! certify. Each returns the contract's report types.

pub use crate::commands::check::{check_dispatch, check_program, check_program_graph};
pub use crate::commands::diagnose::diagnose_text_merged as diagnose_text;
pub use crate::commands::diagnose::{diagnose_with_spec, traced, Examples};
