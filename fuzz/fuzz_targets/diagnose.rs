//! `cargo +nightly fuzz run diagnose`: the message reader, the guard parser and the whole
//! diagnosis must never panic, whatever the input.
#![no_main]

use dimguard::commands::diagnose::{diagnose_text, Options};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = dimguard_solver::parse_guard(text);
        let _ = diagnose_text(text, &Options::default());
    }
});
