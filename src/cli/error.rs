//! The one error type of the command-line tool, and the exit code each kind maps to.

use std::fmt;
use std::process::ExitCode;

/// Why a command failed. Each kind has its exit code (see `docs/CONTRACT.md`); the message goes
/// to standard error as `dimguard: <message>`.
#[derive(Debug)]
pub enum Failure {
    /// A file or standard input could not be read, or an output file written (exit code 1).
    Io(String),
    /// The input was read but not understood, or the arguments are invalid (exit code 2).
    Input(String),
    /// `profile --select`: no profile serves the shape (exit code 3).
    NoProfile(String),
}

impl Failure {
    /// The process exit code.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Failure::Io(_) => 1,
            Failure::Input(_) => 2,
            Failure::NoProfile(_) => 3,
        })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Io(m) | Failure::Input(m) | Failure::NoProfile(m) => f.write_str(m),
        }
    }
}

/// `.map_err(io)`: a failure to read or write.
pub fn io(e: impl fmt::Display) -> Failure {
    Failure::Io(e.to_string())
}

/// `.map_err(input)`: input that was read but is not valid.
pub fn input(e: impl fmt::Display) -> Failure {
    Failure::Input(e.to_string())
}

/// A solver error, with a note for guards dimguard cannot read.
pub fn solver(e: &dimguard::solver::Error) -> Failure {
    use dimguard::solver::Error;
    Failure::Input(match e {
        Error::Guard { .. } => format!(
            "{e}\n  = note: if this guard is valid PyTorch output, please report it; dimguard cannot solve what it cannot read"
        ),
        other => other.to_string(),
    })
}
