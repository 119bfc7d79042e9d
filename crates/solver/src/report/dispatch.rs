//! Dispatch and TensorRT: the cover of a range by programs ([`CoverReport`]) and the
//! dispatch over several programs ([`DispatchReport`]).

use super::check::CheckReport;
use super::common::Feasible;
use serde::{Deserialize, Serialize};

/// `diagnose --cover N`: several specs that together accept every valid size
/// ([`crate::cover::cover`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverReport {
    /// The dimensions covered (independent, decided, dynamic), by name.
    pub dims: Vec<String>,
    /// The specs, largest first; pairwise disjoint.
    pub pieces: Vec<CoverPiece>,
    /// Tuples of sizes the specs accept together.
    pub covered: u128,
    /// Valid tuples of sizes (the product of the dimensions' feasible counts).
    pub valid: u128,
    /// Tuples in the dimensions' ranges, valid or not.
    pub in_range: u128,
    /// Tuples the first suggestions (one `Dim` per dimension) accept.
    pub one_dim: u128,
    /// `"1014 of 1014 valid sizes (2026 in the range) in 4 specs; one Dim: 254"`.
    pub summary: String,
    /// Dimensions the cover leaves as the diagnosis prints them, and why (linked, undecided).
    pub left_out: Vec<String>,
}

/// One spec of a cover: a progression per dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverPiece {
    /// One progression per covered dimension, in [`CoverReport::dims`] order.
    pub sides: Vec<CoverSide>,
    /// Tuples it accepts (the product of its sides' counts).
    pub count: u128,
    /// Python to paste: the `Dim`s and the `dynamic_shapes` dict.
    pub code: String,
}

/// One dimension's progression in a [`CoverPiece`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverSide {
    /// Dimension name.
    pub name: String,
    /// First value.
    pub lo: i128,
    /// Last value.
    pub hi: i128,
    /// Step.
    pub modulus: i128,
    /// `lo % modulus`.
    pub residue: i128,
    /// Number of values.
    pub count: u128,
}

impl CoverSide {
    /// `h in 32..512 ≡ 0 (mod 8)`: the side in words, as every renderer writes it.
    pub fn text(&self) -> String {
        let step = if self.modulus > 1 {
            format!(" ≡ {} (mod {})", self.residue, self.modulus)
        } else {
            String::new()
        };
        format!("{} in {}..{}{step}", self.name, self.lo, self.hi)
    }
}

/// `dimguard check` of a `dimguard.Dispatch` archive: each program's check, and per input size
/// the sizes some program accepts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DispatchReport {
    /// Each program of the archive, in the manifest's order.
    pub programs: Vec<DispatchProgram>,
    /// Per dynamic input size of any program: the union of the programs' accepted sets.
    pub union: Vec<UnionDim>,
    /// `"3 programs; x[2]: 205 sizes accepted by some program (96..300)"`.
    pub summary: String,
}

/// One program of a [`DispatchReport`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DispatchProgram {
    /// Its entry in the archive (`programs/0.pt2`).
    pub file: String,
    /// What `check` says of it.
    pub check: CheckReport,
}

/// One input size of a [`DispatchReport`]: the sizes some program accepts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnionDim {
    /// Input name.
    pub input: String,
    /// Dimension.
    pub index: usize,
    /// The union of the accepted sets of the programs where it is dynamic (null when one of them
    /// left it undecided: the union is then not known exactly).
    pub accepted: Option<Feasible>,
    /// The programs in which it is dynamic (indices into `programs`); in the others it is fixed
    /// at their traced size.
    pub dynamic_in: Vec<usize>,
}

/// `dimguard check model.onnx`: the report `dimguard.onnx.export` stored in the file's
/// `metadata_props` (the exported program's `check`, flattened: `dims`, `joint`, `inputs`,
/// `symbols`, `guards`, `runtime`, ...) and what the file itself says ([`OnnxFile`]).
/// Serialized only (the flattened report holds 128-bit counts, which serde cannot buffer).
#[derive(Debug, Clone, Serialize)]
pub struct OnnxReport {
    /// The stored check of the exported program.
    #[serde(flatten)]
    pub check: CheckReport,
    /// The ONNX file.
    pub onnx: OnnxFile,
}

/// What an ONNX file says of its inputs, beside the stored report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OnnxFile {
    /// The file.
    pub file: String,
    /// The default opset's version.
    pub opset: Option<i64>,
    /// `producer_name producer_version`.
    pub producer: String,
    /// The graph's inputs (not initializers), as the file declares them.
    pub inputs: Vec<OnnxInputShape>,
    /// Each symbolic axis, `x[2] = h`: onnxruntime takes any size there.
    pub symbolic: Vec<String>,
    /// The final `dynamic_shapes` of the export (Python), when stored.
    pub spec: Option<String>,
    /// The dimguard that wrote the report.
    pub dimguard_version: Option<String>,
    /// Where the file and the stored report disagree (an input one of them lacks, a rank, a
    /// fixed size); empty when they agree.
    pub notes: Vec<String>,
}

/// One input of an ONNX file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OnnxInputShape {
    /// Its name in the file.
    pub name: String,
    /// The program's input it stands for (the same name unless the exporter renamed it).
    pub input: String,
    /// Per axis: a fixed size, a `dim_param` name, or null (no size recorded); null for the whole
    /// shape when the file records none.
    pub shape: Option<Vec<Option<super::check::ShapeEntry>>>,
}
