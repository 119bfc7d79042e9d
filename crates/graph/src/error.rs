//! The graph crate's errors: one enum for the crate, and the shape rules' error it wraps.
//!
//! A leaf module: it names the failing file, node or expression as data, and imports nothing of
//! the crate, so every module can return it.

use dimguard_solver::ParseError;

/// Errors of the graph crate; variants name the failing operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A zip archive without an exported program in it.
    #[error("{path} is a zip archive but holds no exported program (no JSON entry with a `graph_module`); entries: {entries}")]
    NoProgram {
        /// The file.
        path: String,
        /// Some entry names.
        entries: String,
    },
    /// Opening the zip archive failed.
    #[error("opening the archive {path}: {message}")]
    Zip {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// The JSON is not an exported program.
    #[error("{path} is not an exported program: {message} (expected torch.export.save output or its models/model.json)")]
    NotAProgram {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// A `range_constraints` entry admits no value.
    #[error("{path}: range_constraints[\"{symbol}\"] has min_val {min} > max_val {max}, so no size is admitted (the file is corrupt or was edited by hand; re-export the program)")]
    EmptyRange {
        /// The file.
        path: String,
        /// The symbol (or expression) the range belongs to.
        symbol: String,
        /// `min_val`.
        min: i64,
        /// `max_val`.
        max: i64,
    },
    /// An ONNX file that does not read (a malformed protobuf, or no graph).
    #[error("{path} is not a readable ONNX model: {message}")]
    Onnx {
        /// The file.
        path: String,
        /// Where and why (byte offset, field path).
        message: String,
    },
    /// An ONNX file without dimguard's report, or with one that does not read.
    #[error("{path}: {message}")]
    OnnxReport {
        /// The file.
        path: String,
        /// What is missing, the file's symbolic axes, and how to add the report.
        message: String,
    },
    /// A node's arguments cannot be right for its operator (a malformed program).
    #[error("{0} (the program is malformed: export it again with torch.export)")]
    Shape(#[from] ShapeError),
    /// A symbolic size could not be parsed.
    #[error("size expression of `{tensor}`: {error}")]
    Expr {
        /// The tensor.
        tensor: String,
        /// The parse error.
        error: Box<ParseError>,
    },
}

/// A node whose arguments cannot be right for its operator: the program is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node `{node}` ({target}): {message}")]
pub struct ShapeError {
    /// The node's name.
    pub node: String,
    /// The operator.
    pub target: String,
    /// What is wrong.
    pub message: String,
}
