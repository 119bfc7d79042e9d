//! How much Z3 certifies, and for how long: the settings every command's certification step
//! (`dimguard`'s `commands::diagnose::certify`, `verify`) shares.

/// Default time limit for one Z3 query, in milliseconds.
pub const TIMEOUT_MS: u32 = 5_000;

/// Which answers Z3 certifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Only what value-by-value re-checking cannot cover (more than
    /// [`dimguard_solver::RECHECK_LIMIT`] values): small answers keep
    /// their `enumeration` certificate and no Z3 start-up is paid.
    Auto,
    /// Every suggestion and every torch fix.
    Always,
}
