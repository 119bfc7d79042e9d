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
    /// Standard output was closed by its reader (`| head`): a normal end (exit code 0, no
    /// message).
    Closed,
}

impl Failure {
    /// The process exit code.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Failure::Io(_) => 1,
            Failure::Input(_) => 2,
            Failure::NoProfile(_) => 3,
            Failure::Closed => 0,
        })
    }

    /// The kind, for the `--json` error object: `"io"`, `"input"` or `"no_profile"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Io(_) | Failure::Closed => "io",
            Failure::Input(_) => "input",
            Failure::NoProfile(_) => "no_profile",
        }
    }

    /// The `--json` error object (docs/CONTRACT.md): printed on stdout beside the message on
    /// stderr.
    pub fn json(&self) -> String {
        let code = match self {
            Failure::Io(_) | Failure::Closed => 1,
            Failure::Input(_) => 2,
            Failure::NoProfile(_) => 3,
        };
        serde_json::json!({
            "error": {"kind": self.kind(), "exit_code": code, "message": self.to_string()}
        })
        .to_string()
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Io(m) | Failure::Input(m) | Failure::NoProfile(m) => f.write_str(m),
            Failure::Closed => f.write_str("standard output was closed"),
        }
    }
}

impl std::error::Error for Failure {}

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

/// Writes `text` to standard output. A reader that went away (`| head -c1`) ends the command
/// normally; any other write error (`> /dev/full`) is an I/O failure, never a panic.
pub fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::Closed),
        Err(e) => Err(Failure::Io(format!("cannot write to standard output: {e}"))),
    }
}
